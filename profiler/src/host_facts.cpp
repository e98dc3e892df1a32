#include "stalldx/host_facts.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>

namespace stalldx {

double load_average_1m() {
  double load = -1;
  return getloadavg(&load, 1) == 1 ? load : -1;
}

HostFacts current_host_facts() {
  HostFacts h;
  h.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) h.usable_cpus = CPU_COUNT(&set);
  h.load_1m_start = load_average_1m();
  return h;
}

}  // namespace stalldx
