"""engine.remove_network on Docker's stale-endpoint state: a network that "has active endpoints" while it lists
none is tried once more, then reported with the network's name and the fix, never as a bare API error. (The
engine is faked: the state itself comes from a race inside dockerd that cannot be produced on demand.)"""

from __future__ import annotations

import docker.errors
import pytest

from protolab import engine, naming
from protolab.errors import LabError


class FakeNet:
    def __init__(self, fails: int, listed: dict | None = None, message: str = "has active endpoints") -> None:
        self.attrs = {"Labels": {naming.LABEL: "true"}, "Containers": listed or {}}
        self.fails, self.message = fails, message
        self.removes, self.disconnected = 0, []

    def reload(self) -> None:
        pass

    def disconnect(self, cid: str, force: bool = False) -> None:
        self.disconnected.append((cid, force))

    def remove(self) -> None:
        self.removes += 1
        if self.removes <= self.fails:
            raise docker.errors.APIError(f"403 Client Error: error while removing network: network plab-mgmt id ab12 "
                                         f"{self.message}")  # fmt: skip


class FakeClient:
    def __init__(self, net: FakeNet) -> None:
        self.networks = self
        self.net = net

    def get(self, name: str) -> FakeNet:
        return self.net


@pytest.fixture(autouse=True)
def no_wait(monkeypatch):
    monkeypatch.setattr(engine, "STALE_ENDPOINTS_RETRY_SECONDS", 0.0)


def test_a_late_endpoint_is_waited_for_once():
    net = FakeNet(fails=1)
    assert engine.remove_network(FakeClient(net), "plab-mgmt") is True
    assert net.removes == 2


def test_stale_endpoints_are_said_with_the_network_and_the_fix():
    net = FakeNet(fails=5, listed={"c0ffee": {"Name": "plab-h1"}})
    with pytest.raises(LabError) as err:
        engine.remove_network(FakeClient(net), "plab-mgmt")
    text = str(err.value)
    assert "plab-mgmt" in text and "restart" in text and "dockerd" in text and "protolab clean" in text
    assert net.removes == 2  # bounded: one retry
    assert net.disconnected == [("c0ffee", True), ("c0ffee", True)]  # what it lists is force-disconnected each time


def test_other_api_errors_are_not_dressed_up():
    net = FakeNet(fails=1, message="permission denied")
    with pytest.raises(docker.errors.APIError):
        engine.remove_network(FakeClient(net), "plab-mgmt")
    assert net.removes == 1
