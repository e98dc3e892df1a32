#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "stalldx/datasets/generator.h"

namespace stalldx::cli {

Action add_dataset_command(CLI::App& app) {
  auto opts = std::make_shared<datasets::GeneratorOptions>();
  CLI::App* sub = app.add_subcommand("dataset", "generate a Food-101-like ImageFolder of JPEGs (+ manifest.tsv)");
  sub->add_option("root", opts->root, "output folder")->required();
  sub->add_option("--classes", opts->classes, "class folders")->capture_default_str();
  sub->add_option("--per-class", opts->images_per_class, "images per class")->capture_default_str();
  sub->add_option("--seed", opts->seed, "content seed (same seed, same bytes)")->capture_default_str();
  sub->add_option("--bad-fraction", opts->bad_fraction, "fraction of planted bad files (truncated, zero-byte, garbage, non-JPEG)")
      ->capture_default_str();
  sub->add_option("--threads", opts->threads, "generator threads (0 = all cores)")->capture_default_str();
  return [opts] {
    datasets::GeneratorReport rep;
    Status st = datasets::generate_dataset(*opts, rep);
    if (!st.is_ok()) return fail("dataset", st);
    const bool ok = print_checked("dataset", fmt::format("wrote {} images ({} planted bad) to {}: {:.1f} MB, {:.1f} KB mean, {:.1f} s\n", rep.images, rep.bad_planted,
               opts->root, rep.total_bytes / 1e6, rep.total_bytes / 1024.0 / static_cast<double>(rep.images), rep.seconds));
    return ok ? 0 : 1;
  };
}

}  // namespace stalldx::cli
