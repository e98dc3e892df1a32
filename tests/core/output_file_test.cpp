// Checked output: no file that is not ours is replaced, no write failure is silent, a failed write
// leaves the old file and no partial behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "stalldx/output_file.h"
#include "stalldx/trace_io.h"
#include "test_support.h"

namespace stalldx {
namespace {
// Any temporary file left in `dir` (name.partial-XXXXXX), links planted by a test aside.
bool has_partial(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".partial-") != std::string::npos) return true;
  return false;
}

using testing::read_file;
using testing::temp_dir;
using testing::write_file;

TEST(OutputFile, RefusesDeviceNodesFoldersFifosAndPathsInsideTheDataset) {
  const std::string dir = temp_dir("out");
  OutputCheck c{"trace"};
  const Status dev = check_output_path("/dev/null", c);
  EXPECT_EQ(dev.code(), Status::Code::invalid_argument);
  EXPECT_NE(dev.message().find("not a regular file"), std::string::npos) << dev.message();
  EXPECT_FALSE(check_output_path(dir, c).is_ok());
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0644), 0);
  EXPECT_FALSE(check_output_path(dir + "/fifo", c).is_ok());
  OutputCheck in_data{"trace", dir + "/data"};
  std::filesystem::create_directories(dir + "/data/class0");
  write_file(dir + "/data/manifest.tsv", "keep me");
  EXPECT_FALSE(check_output_path(dir + "/data/manifest.tsv", in_data).is_ok());
  EXPECT_FALSE(check_output_path(dir + "/data/class0/../t.json", in_data).is_ok());
  EXPECT_EQ(read_file(dir + "/data/manifest.tsv"), "keep me");
  EXPECT_TRUE(check_output_path(dir + "/t.json", in_data).is_ok());
  EXPECT_FALSE(in_data.replaced);
  write_file(dir + "/t.json", "old");
  EXPECT_TRUE(check_output_path(dir + "/t.json", in_data).is_ok());
  EXPECT_TRUE(in_data.replaced);
  EXPECT_EQ(check_output_path("/nonexistent-dir/t.json", c).code(), Status::Code::io_error);
  EXPECT_FALSE(has_partial(dir));
}

// A link planted where a temporary file would go is never followed: the temporary name is new and
// created exclusively; the link's target stays as it was.
TEST(OutputFile, APlantedLinkAtTheTemporaryNameIsNeverFollowed) {
  const std::string dir = temp_dir("planted");
  write_file(dir + "/victim", "precious");
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/out.json.partial").c_str()), 0);
  ASSERT_TRUE(write_file_atomic(dir + "/out.json", "report").is_ok());
  Trace t;
  ASSERT_TRUE(write_trace_file(t, dir + "/out.json").is_ok());
  EXPECT_EQ(read_file(dir + "/victim"), "precious");
}

TEST(OutputFile, AtomicWriteReplacesRegularFilesOnlyAndLeavesNoPartial) {
  const std::string dir = temp_dir("out");
  ASSERT_TRUE(write_file_atomic(dir + "/a.txt", "one").is_ok());
  ASSERT_TRUE(write_file_atomic(dir + "/a.txt", "two").is_ok());
  EXPECT_EQ(read_file(dir + "/a.txt"), "two");
  EXPECT_FALSE(has_partial(dir));
  struct stat before {};
  ASSERT_EQ(stat("/dev/null", &before), 0);
  EXPECT_FALSE(write_file_atomic("/dev/null", "x").is_ok());
  Trace t;
  EXPECT_FALSE(write_trace_file(t, "/dev/null").is_ok());
  struct stat after {};
  ASSERT_EQ(stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode)) << "/dev/null was replaced";
  EXPECT_FALSE(append_file("/dev/null", "x").is_ok());
  ASSERT_TRUE(append_file(dir + "/b.csv", "h\n").is_ok());
  ASSERT_TRUE(append_file(dir + "/b.csv", "r\n").is_ok());
  EXPECT_EQ(read_file(dir + "/b.csv"), "h\nr\n");
}

TEST(OutputFile, StdoutWriteFailureIsReported) {
  const int saved = dup(1);
  ASSERT_GE(saved, 0);
  const int full = open("/dev/full", O_WRONLY);
  if (full < 0) GTEST_SKIP() << "no /dev/full here";
  fflush(stdout);
  dup2(full, 1);
  const Status st = write_stdout(std::string(1 << 16, 'x'));
  fflush(stdout);
  clearerr(stdout);
  dup2(saved, 1);
  close(full);
  close(saved);
  EXPECT_EQ(st.code(), Status::Code::io_error);
  EXPECT_NE(st.message().find("standard output"), std::string::npos);
}

// A small tmpfs: a write that does not fit fails loudly, the old file stays, no partial is left.
TEST(OutputFile, DiskFullFailsLoudlyAndKeepsTheOldFile) {
  const std::string dir = temp_dir("tmpfs");
  if (mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << std::strerror(errno);
  ASSERT_TRUE(write_file_atomic(dir + "/r.json", "old").is_ok());
  const Status st = write_file_atomic(dir + "/r.json", std::string(1 << 20, 'x'));
  EXPECT_EQ(st.code(), Status::Code::io_error) << st.message();
  EXPECT_EQ(read_file(dir + "/r.json"), "old");
  EXPECT_FALSE(has_partial(dir));
  EXPECT_FALSE(append_file(dir + "/rows.csv", std::string(1 << 20, 'x')).is_ok());
  Trace big;
  for (int i = 0; i < 5000; ++i) big.ranges.push_back(HostRange{i, i + 1});
  big.threads.push_back(ThreadInfo{0, 1, "t", 0});
  EXPECT_FALSE(write_trace_file(big, dir + "/t.json").is_ok());
  EXPECT_FALSE(has_partial(dir));
  umount(dir.c_str());
}

}  // namespace
}  // namespace stalldx
