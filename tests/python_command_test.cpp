// Reading a recorded command line for the Python hook (tasks/python_command.h): which commands start a
// Python, and which of its flags keep the hook (PYTHONPATH + sitecustomize) out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "python_command.h"

namespace stalldx::tasks {
namespace {

PythonCommand read(std::vector<std::string> cmd) { return read_python_command(cmd); }

TEST(PythonCommand, InterpretersAreToldFromOtherPrograms) {
  EXPECT_TRUE(read({"python3", "train.py"}).python);
  EXPECT_TRUE(read({"/usr/bin/python3.11", "train.py"}).python);
  EXPECT_TRUE(read({"python", "-m", "torch.distributed.run", "x.py"}).python);
  EXPECT_TRUE(read({"/usr/bin/env", "-u", "PYTHONPATH", "CUDA_VISIBLE_DEVICES=0", "python3", "-u", "t.py"}).python);
  EXPECT_FALSE(read({"python3-config", "--libs"}).python);
  EXPECT_FALSE(read({"./python_job.sh"}).python);
  EXPECT_FALSE(read({"torchrun", "--nproc-per-node", "2", "t.py"}).python);
  EXPECT_FALSE(read({"env", "A=1"}).python);
  EXPECT_FALSE(read({}).python);
}

TEST(PythonCommand, FlagsThatIgnorePythonpathOrSiteAreNamed) {
  EXPECT_EQ(read({"python3", "-I", "t.py"}).blocking, "-I");
  EXPECT_EQ(read({"python3", "-E", "t.py"}).blocking, "-E");
  EXPECT_EQ(read({"python3", "-uS", "t.py"}).blocking, "-S");
  EXPECT_EQ(read({"python3", "-X", "dev", "-B", "-I", "t.py"}).blocking, "-I");
  EXPECT_EQ(read({"python3", "-Wignore", "-E", "-c", "pass"}).blocking, "-E");
  // Not the interpreter's: an argument of -X / -W, the script's own options, -c code and -m module.
  EXPECT_EQ(read({"python3", "-X", "I", "t.py"}).blocking, "");
  EXPECT_EQ(read({"python3", "-W", "E", "t.py"}).blocking, "");
  EXPECT_EQ(read({"python3", "t.py", "-I"}).blocking, "");
  EXPECT_EQ(read({"python3", "-c", "-I"}).blocking, "");
  EXPECT_EQ(read({"python3", "-m", "pkg", "-E"}).blocking, "");
  EXPECT_EQ(read({"python3", "-s", "-u", "-O", "t.py"}).blocking, "") << "-s (no user site) keeps PYTHONPATH and sitecustomize";
  EXPECT_EQ(read({"python3", "--check-hash-based-pycs", "always", "-I", "t.py"}).blocking, "-I");
}

}  // namespace
}  // namespace stalldx::tasks
