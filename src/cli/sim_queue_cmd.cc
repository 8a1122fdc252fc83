// `tidal sim queue`: time-stamped replay with queueing (FIFO, FIFO + EASY backfill).
#include "cli/commands.h"

namespace tidal::cli {

void RegisterSimQueueCommand(CLI::App& sim) {
  auto* queue = sim.add_subcommand("queue", "Replay a time-stamped trace with queueing (not yet implemented)");
  queue->callback([] { SetExitCode(2); });
}

}  // namespace tidal::cli
