"""labkit.faults: crashes happen exactly at the named checkpoint, and only inside crash_at."""
import pytest

from labkit.faults import SimulatedCrash, checkpoint, crash_at


def three_steps(log):
    log.append(1)
    checkpoint("a")
    log.append(2)
    checkpoint("b")
    log.append(3)


def test_no_plan_no_crash():
    log = []
    three_steps(log)
    assert log == [1, 2, 3]


def test_crash_between_writes():
    log = []
    with pytest.raises(SimulatedCrash, match="'b'"):
        with crash_at("b"):
            three_steps(log)
    assert log == [1, 2]
    three_steps(log)  # the plan ended with the block
    assert log == [1, 2, 1, 2, 3]


def test_nth_pass():
    log = []
    with crash_at("a", on=[2]):
        three_steps(log)
        with pytest.raises(SimulatedCrash):
            three_steps(log)
    assert log == [1, 2, 3, 1]


@pytest.mark.parametrize("kwargs", [{"name": ""}, {"name": "a", "on": 0}, {"name": "a", "on": []}, {"name": "a", "on": True}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        with crash_at(**kwargs):
            pass
