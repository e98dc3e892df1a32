#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "run_options.h"
#include "stalldx/datasets/generator.h"

namespace stalldx::cli {

Action add_dataset_command(CLI::App& app) {
  auto opts = std::make_shared<datasets::GeneratorOptions>();
  CLI::App* sub = app.add_subcommand("dataset", "generate a Food-101-like ImageFolder of JPEGs (+ manifest.tsv)");
  sub->footer("Manual: docs/run.md (Datasets)");
  sub->add_option("root", opts->root, "output folder")->required();
  sub->add_option("--classes", opts->classes, "class folders")->capture_default_str()->check(CLI::Range(1, 100000));
  sub->add_option("--per-class", opts->images_per_class, "images per class")->capture_default_str()->check(CLI::Range(1, 10000000));
  sub->add_option("--seed", opts->seed, "content seed (same seed, same bytes)")->capture_default_str();
  sub->add_option("--detail", opts->detail, "fine texture and grain (1: the default set's, ~36 KB mean; 1.5: ~49 KB, about Food-101's mean)")
      ->capture_default_str()->check(CLI::Range(0.0, 10.0));
  sub->add_option("--bad-fraction", opts->bad_fraction, "fraction of planted bad files (truncated, zero-byte, garbage, non-JPEG)")
      ->capture_default_str()->check(finite_in(0.0, 1.0));
  sub->add_option("--threads", opts->threads, "generator threads (0 = all cores)")->capture_default_str()->check(CLI::Range(0, 1024));
  sub->add_flag("--force", opts->force, "write into a folder that is not empty (replacing its manifest.tsv and same-named images)");
  sub->add_flag("--resume", opts->resume, "finish an interrupted generation (same options), keeping the images already written");
  return [opts] {
    datasets::GeneratorReport rep;
    opts->stop = &stop_flag();
    note("stalldx dataset: writing {} images to {}\n", static_cast<long long>(opts->classes) * opts->images_per_class, opts->root);
    Status st = datasets::generate_dataset(*opts, rep);
    if (!st.is_ok()) return fail("dataset", st);
    if (rep.interrupted) {
      note("stalldx dataset: interrupted; '{}' is marked incomplete (never used as a dataset): finish it with --resume\n",
                 opts->root);
      return stop_flag().exit_code();
    }
    const bool ok = print_checked(
        "dataset", fmt::format("wrote {} images ({} planted bad{}) to {}: {:.1f} MB, {:.1f} KB mean, {:.1f} s\n", rep.images, rep.bad_planted,
                               rep.resumed ? fmt::format(", {} kept from the interrupted run", rep.resumed) : "", opts->root,
                               rep.total_bytes / 1e6, rep.total_bytes / 1024.0 / static_cast<double>(rep.images), rep.seconds));
    return ok ? 0 : 1;
  };
}

}  // namespace stalldx::cli
