"""The watchdog's thread is woken only for a deadline sooner than the one it sleeps until
(`upstream.store.deadlines.Watchdog`): a read arms its connection for every statement, and a
wake-up per statement cost a one-level PostgreSQL read more than its statements did. A
sooner deadline is still kept."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from upstream.store.deadlines import Watchdog


class Connection:
    """What the watchdog needs of a DBAPI connection: its socket and whether it is closed."""

    def __init__(self) -> None:
        self.ours, self.server = socket.socketpair()
        self.closed = False

    def fileno(self) -> int:
        return self.ours.fileno()

    def shut_down(self, within: float) -> bool:
        """Whether the watchdog ended the stream within `within` seconds (the server's end
        reads its end)."""
        self.server.settimeout(within)
        try:
            return self.server.recv(1) == b""
        except TimeoutError:
            return False


@pytest.fixture
def watchdog() -> Iterator[Watchdog]:
    dog = Watchdog()
    yield dog
    dog.close()


def test_a_later_deadline_does_not_wake_the_thread_and_a_sooner_one_does(
    watchdog: Watchdog, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, later, sooner = Connection(), Connection(), Connection()
    watchdog.arm(first, 30)
    time.sleep(0.2)  # the thread has started and sleeps until the first deadline
    wakes: list[None] = []
    notify = watchdog._wake.notify
    monkeypatch.setattr(watchdog._wake, "notify", lambda: (wakes.append(None), notify()))
    watchdog.arm(later, 31)
    watchdog.arm(first, 32)  # a connection armed again for its next statement
    assert wakes == []
    watchdog.arm(sooner, 0.05)
    assert len(wakes) == 1
    assert sooner.shut_down(within=5)
    assert not first.shut_down(within=0.1)


def test_a_sooner_deadline_than_a_disarmed_one_is_kept(
    watchdog: Watchdog,
) -> None:
    done = Connection()
    watchdog.arm(done, 30)
    watchdog.disarm(done)
    time.sleep(0.2)  # the thread found nothing overdue and sleeps until that deadline
    late = Connection()
    watchdog.arm(late, 0.05)
    assert late.shut_down(within=5)
