#include "kineto_job.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "stalldx/rank_facts.h"

namespace stalldx::record {

void read_kineto_job(const std::string& text, std::optional<std::string_view> events, TraceMeta& meta) {
  if (text.find("\"distributedInfo\"") == std::string::npos && text.find("\"baseTimeNanoseconds\"") == std::string::npos) return;
  // Kineto's layout: the text around the events is itself a document with an empty traceEvents.
  std::string rest;
  if (events) {
    const std::size_t begin = static_cast<std::size_t>(events->data() - text.data());
    rest = text.substr(0, begin) + text.substr(begin + events->size());
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(events ? rest : text).get(doc)) return;  // the events' reader names the problem
  std::int64_t base = 0;
  if (!doc["baseTimeNanoseconds"].get_int64().get(base) && base > 0) meta.config[rank_facts::kBaseTimeNs] = std::to_string(base);
  simdjson::dom::element info;
  std::int64_t rank = -1, world = 0;
  if (doc["distributedInfo"].get(info) || info["rank"].get_int64().get(rank) || info["world_size"].get_int64().get(world)) return;
  if (world < 2 || rank < 0 || rank >= world || world > (1 << 24)) return;
  std::string_view backend = "?";
  if (info["backend"].get_string().get(backend)) backend = "?";
  meta.config["rank"] = std::to_string(rank);
  meta.config["world_size"] = std::to_string(world);
  // Kineto names no job: traces of one job agree on this, and a trace of another world size does not.
  meta.config[rank_facts::kRunId] = fmt::format("torch.profiler {} job of {} ranks", backend, world);
}

}  // namespace stalldx::record
