// Names as people write them: the word form, every spelling of the built-in dictionary, search semantics
// for --step and roles files, untrusted patterns and names (the step rules: step_inference_test.cpp).
#include <gtest/gtest.h>

#include "stalldx/name_pattern.h"
#include "stalldx/record/merge.h"
#include "stalldx/record/part_format.h"
#include "stalldx/record/role_map.h"

namespace stalldx::record {
namespace {

TEST(WordForm, SplitsAtSeparatorsCaseChangesAndDigits) {
  EXPECT_EQ(word_form("DataLoader.__next__"), "_data_loader_next_");
  EXPECT_EQ(word_form("train_step[5]"), "_train_step_5_");
  EXPECT_EQ(word_form("h2d"), "_h_2_d_");
  EXPECT_EQ(word_form("HTTPServer"), "_http_server_");
  EXPECT_EQ(word_form("step 12"), "_step_12_");
  EXPECT_EQ(word_form("data-wait"), "_data_wait_");
  EXPECT_EQ(word_form(std::string(300, 'a')), "") << "a long name (op shapes) has no word form";
}

TEST(RoleMap, EverySpellingOfTheDictionaryInAnyCase) {
  const RoleMap m = RoleMap::defaults();
  const std::vector<std::pair<std::vector<std::string>, Role>> spellings = {
      {{"data_wait", "wait_data", "dataloader", "next_batch", "get_batch", "fetch", "load_batch", "input", "DataWait", "Next Batch",
        "wait_for_batch", "wait_batch"},
       Role::wait_batch},
      {{"h2d", "to_device", "copy_to_gpu", "transfer", "memcpy", "H2D", "ToDevice", "copy to gpu"}, Role::submit},
      {{"forward", "backward", "optimizer", "fwd", "bwd", "opt_step", "Forward", "model.forward", "optimizer_step", "backward 3"},
       Role::compute},
      {{"getitem", "__getitem__", "decode", "transform", "augment", "Decode", "Transform 7"}, Role::decode},
      {{"read", "load", "read_file", "Read", "retrieval", "read_batch", "ReadData"}, Role::retrieval},
      {{"collate", "collate_fn", "Collate"}, Role::collate},
      {{"step 12", "iter_7", "Iteration 3", "train_step[5]", "step", "ITER 9"}, Role::step},
      {{"sync", "synchronize"}, Role::sync},
      {{"allreduce", "all_reduce", "AllReduce", "all-gather", "nccl:all_reduce", "gloo:broadcast", "c10d::allreduce_", "barrier",
        "reduce_scatter", "MPI_Allreduce", "ncclAllReduce"},
       Role::collective},
  };
  for (const auto& [names, role] : spellings)
    for (const std::string& n : names) EXPECT_EQ(m.match(n, ""), role) << "'" << n << "' should be " << role_name(role);
  // PyTorch's own names, matched as they are.
  EXPECT_EQ(m.match("ProfilerStep#12", ""), Role::step);
  EXPECT_EQ(m.match("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ""), Role::wait_batch);
  // Not everything that contains a word: labels are matched whole.
  for (const char* n : {"data_load", "thread_pool", "reload_config", "input_transform_cache", "aten::conv2d", "stepper", "my_custom_thing",
                        "autograd::engine::evaluate_function: ConvolutionBackward0"})
    EXPECT_FALSE(m.match(n, "").has_value()) << n;
}

TEST(RoleMap, UserRulesAreSearchedLikeGrepAndAnchoredWhenWritten) {
  RoleMap m;
  ASSERT_TRUE(RoleMap::parse("[[role]]\nmatch = \"slurp\"\nrole = \"retrieval\"\n\n[[role]]\nmatch = \"^crunch$\"\nrole = \"decode\"\n",
                             "roles.toml", m).is_ok());
  EXPECT_EQ(m.match("big_slurp_of_files", ""), Role::retrieval);
  EXPECT_EQ(m.match("crunch", ""), Role::decode);
  EXPECT_FALSE(m.match("crunchy", "").has_value());
}

TEST(RoleMap, DefaultsCoverPyTorchDaliAndStalldxNames) {
  const RoleMap m = RoleMap::defaults();
  EXPECT_EQ(m.match("ProfilerStep#12", ""), Role::step);
  EXPECT_EQ(m.match("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ""), Role::wait_batch);
  EXPECT_EQ(m.match("aten::copy_", ""), Role::submit);
  EXPECT_EQ(m.match("cudaStreamSynchronize", ""), Role::sync);
  EXPECT_EQ(m.match("aten::item", ""), Role::sync);
  EXPECT_EQ(m.match("read_file", "stalldx"), Role::retrieval);
  EXPECT_EQ(m.match("decode_transform", ""), Role::decode);
  EXPECT_EQ(m.match("__getitem__", ""), Role::decode);
  EXPECT_EQ(m.match("[DALI] FileReader", ""), Role::retrieval);
  EXPECT_EQ(m.match("ncclAllReduce", "NCCL"), Role::collective);
  EXPECT_EQ(m.match("MPI_Allreduce", ""), Role::collective);
  // The seed's data_load holds retrieval and submission: unmapped, so the diagnosis can say so.
  EXPECT_FALSE(m.match("data_load", "").has_value());
  EXPECT_FALSE(m.match("my_custom_thing", "").has_value());
  // Names people give their loop's parts, in their own spelling.
  for (const auto& [name, role] : std::vector<std::pair<const char*, Role>>{
           {"epoch 1 step 3", Role::step}, {"get_next_batch", Role::wait_batch}, {"batch_fetch", Role::wait_batch},
           {"HtoD", Role::submit}, {"host_to_device", Role::submit}, {"move_to_device", Role::submit}, {"cuda_copy", Role::submit},
           {"zero_grad", Role::compute}, {"file_read", Role::retrieval}, {"disk_read", Role::retrieval}, {"s3_get", Role::retrieval},
           {"jpeg_decode", Role::decode}, {"DecodeImage", Role::decode}, {"RandomResizedCrop", Role::decode}, {"resize", Role::decode},
           {"normalize", Role::decode}})
    EXPECT_EQ(m.match(name, ""), role) << name;
  EXPECT_FALSE(m.match("DtoH", "").has_value()) << "a copy back is no submission of input";
}

TEST(RoleMap, UserRulesComeFirstAndBadFilesNameTheLine) {
  RoleMap m;
  ASSERT_TRUE(RoleMap::parse("[[role]]\nmatch = \"load_.*\"\nrole = \"retrieval\"\n\n[[role]]\nmatch = \"step\"\ndomain = \"mine\"\nrole = \"user\"\n",
                             "roles.toml", m).is_ok());
  EXPECT_EQ(m.match("load_image", ""), Role::retrieval);
  EXPECT_EQ(m.match("step", "mine"), Role::user);   // the domain rule
  EXPECT_EQ(m.match("step", "other"), Role::step);  // the default
  const Status bad_role = RoleMap::parse("[[role]]\nmatch = \"x\"\nrole = \"loading\"\n", "roles.toml", m);
  EXPECT_FALSE(bad_role.is_ok());
  EXPECT_NE(bad_role.message().find("roles.toml:1"), std::string::npos) << bad_role.message();
  EXPECT_NE(bad_role.message().find("loading"), std::string::npos);
  const Status bad_regex = RoleMap::parse("[[role]]\nmatch = \"(\"\nrole = \"step\"\n", "roles.toml", m);
  EXPECT_NE(bad_regex.message().find("not a regular expression"), std::string::npos) << bad_regex.message();
  const Status bad_toml = RoleMap::parse("[[role]\nmatch = \n", "roles.toml", m);
  EXPECT_NE(bad_toml.message().find("roles.toml:1"), std::string::npos) << bad_toml.message();
  const Status bad_key = RoleMap::parse("[[role]]\nmatch = \"x\"\nrole = \"step\"\npattern = \"y\"\n", "roles.toml", m);
  EXPECT_NE(bad_key.message().find("pattern"), std::string::npos) << bad_key.message();
}

TEST(NamePattern, SearchSemanticsAndUntrustedInput) {
  NamePattern p;
  ASSERT_TRUE(NamePattern::compile("^step", "--step", p).is_ok());
  EXPECT_TRUE(p.found_in("step 12"));
  EXPECT_FALSE(p.found_in("a step"));
  ASSERT_TRUE(NamePattern::compile("step", "--step", p).is_ok());
  EXPECT_TRUE(p.found_in("train_step[5]"));
  // Catastrophic backtracking in a backtracking engine; linear here (a test never asserts a timing: it
  // would not finish at all with std::regex on a longer name).
  ASSERT_TRUE(NamePattern::compile("(a+)+$", "--step", p).is_ok());
  EXPECT_FALSE(p.found_in(std::string(100'000, 'a') + "!"));
  ASSERT_TRUE(NamePattern::compile("(x|y)*z", "--step", p).is_ok());
  EXPECT_FALSE(p.found_in(std::string(30'000, 'x')));  // std::regex overflowed its stack on such a name
  // 20,000 nested groups (std::regex's compiler crashed): compiled without recursion, or refused by name.
  std::string nested;
  for (int i = 0; i < 20'000; ++i) nested += '(';
  nested += 'a';
  for (int i = 0; i < 20'000; ++i) nested += ')';
  const Status deep = NamePattern::compile(nested, "--step", p);
  if (deep.is_ok()) EXPECT_TRUE(p.found_in("xa"));
  else EXPECT_NE(deep.message().find("--step"), std::string::npos) << deep.message();
  // A pattern beyond the memory bound is refused with the option's name, not compiled.
  const Status huge = NamePattern::compile("((a{1000}){1000}){1000}", "--step", p);
  EXPECT_FALSE(huge.is_ok());
  EXPECT_NE(huge.message().find("--step"), std::string::npos) << huge.message();
  const Status bad = NamePattern::compile("(", "roles.toml:3: match", p);
  EXPECT_NE(bad.message().find("roles.toml:3"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace stalldx::record

namespace stalldx::record {
namespace {
TEST(BatchLabel, ThePythonHooksPackedIdsReadAsIteratorPassAndIndex) {
  EXPECT_EQ(batch_label(7), "batch 7");  // a step number, or the first iterator's batch
  EXPECT_EQ(batch_label((std::int64_t{2} << kBatchIteratorShift) | 5), "batch 5 of DataLoader iterator 3");
  EXPECT_EQ(batch_label((std::int64_t{1} << kBatchIteratorShift) | (std::int64_t{1} << kBatchPassShift) | 4),
            "batch 4 of DataLoader iterator 2, pass 2");
  EXPECT_EQ(batch_label(std::int64_t{3} << kBatchPassShift), "batch 0 of DataLoader iterator 1, pass 4");
}
}  // namespace
}  // namespace stalldx::record
