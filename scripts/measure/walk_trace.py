# gdb script (see walk.sh): one breakpoint on each function of the crate,
# dropped at its first hit; writes each function's file:line and name in
# the order they are first entered. gdb runs the test binary without
# address randomisation, so a PIE's functions are at this base.
import gdb
import os

BASE = 0x555555554000
trace = open(os.environ["WALK_TRACE"], "w")


class First(gdb.Breakpoint):
    def stop(self):
        trace.write(f"{self.where} {self.function}\n")
        trace.flush()
        # A breakpoint is not changed from its own stop(): after it.
        gdb.post_event(lambda: setattr(self, "enabled", False))
        return False


gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("starti")
for line in open(os.environ["WALK_FUNCTIONS"]):
    address, function, where = line.split()
    bp = First(f"*0x{BASE + int(address, 16):x}", internal=True)
    bp.function, bp.where = function, where
gdb.execute("continue")
