# gdb script (see round-trips.sh): counts the calls that read or write an
# agent's overlay in the store during one test, at the file:line each
# function starts (the test binary carries line tables only).
import gdb
import os

wanted = os.environ["ROUND_TRIPS"].split(",")
counts = {}


class Counted(gdb.Breakpoint):
    def stop(self):
        counts[self.name] = counts.get(self.name, 0) + 1
        return False


gdb.execute("set pagination off")
for entry in wanted:
    name, where = entry.split("=")
    Counted(where, internal=True).name = name


def done(_event):
    print("ROUND TRIPS " + ", ".join(f"{n.split('=')[0]} {counts.get(n.split('=')[0], 0)}" for n in wanted))


gdb.events.exited.connect(done)
gdb.execute("run")
