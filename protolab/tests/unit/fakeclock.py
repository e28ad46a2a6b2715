"""A clock the waiting code under test reads and sleeps on, without sleeping (quiesce, reassembly)."""


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s
