// libFuzzer target: arbitrary bytes as a --config file through the config checker and, when it passes,
// CLI11's own reading of it into a RunConfig (the field table's parsers).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "config_check.h"
#include "run_options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/stalldx-config-fuzz-" + std::to_string(getpid()) + ".toml";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  CLI::App app;
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.set_config("--config");
  stalldx::RunConfig c;
  CLI::App* run = app.add_subcommand("run");
  stalldx::cli::add_run_options(*run, c);
  run->fallthrough();
  if (stalldx::cli::check_config_file(path, app).is_ok()) {
    try {
      app.parse(std::vector<std::string>{"run", path, "--config"});
    } catch (const CLI::Error&) {
    }
  }
  return 0;
}
