// Roles of host ranges (DESIGN.md "Records"). The role, not the name, is what the diagnosis reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stalldx {

enum class Role : std::uint8_t {
  step,        // one training step on the consumer thread
  wait_batch,  // consumer blocked for its next batch
  retrieval,   // one sample's bytes fetched from storage
  decode,      // decode + transforms into the batch slot
  collate,     // assembling a batch
  submit,      // host CUDA work handing a batch and its step to the device
  sync,        // host blocked on device completion or an in-flight limit
  user,        // anything else the author wants on the timeline
  collective,  // a rank's part in a collective (all-reduce) with the other ranks: from its call to its return
  compute,     // the host issuing the step's device work (forward, backward, optimizer): not a wait of its own
};
inline constexpr int kRoleCount = 10;

std::string_view role_name(Role role) noexcept;
std::optional<Role> role_from_name(std::string_view name) noexcept;

}  // namespace stalldx
