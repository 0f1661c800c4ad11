"""Stand-ins for the bench's GPU context, shared by the CPU tests."""
import types


class OneRank:
    """What time_interleaved uses of bench.Ctx, for one rank on the host."""
    world = 1
    torch = None
    device = types.SimpleNamespace(type="cpu")
    dist = types.SimpleNamespace(barrier=lambda: None)
    watchdog = types.SimpleNamespace(arm=lambda *a: None, disarm=lambda: None)

    def sync(self):
        pass

    def release(self):
        return []

    def agree(self, status, message="", collectives=True):
        return (status, [message] if status else [])

    def per_rank(self, values):
        return [list(values)]

    def max_over_ranks(self, ranks):
        return [max(col) for col in zip(*ranks)]

    def reduce(self, values, op):
        return list(values)
