"""Viewers, the controller role, layout ownership and input seqs, without processes."""

from __future__ import annotations

from forge.supervisor.browser.tabroles import RoleTable, Size, Verdict, check_size
from forge.wire.browser import BrowserView

TAB1 = ("acme/default", 1)
TAB2 = ("acme/default", 2)


def test_reattach_to_the_same_tab_keeps_viewer_and_role() -> None:
    table = RoleTable()
    first = table.attach("a", TAB1, jpeg=False)
    table.take("a")
    again = table.attach("a", TAB1, jpeg=False)
    assert again.same_surface
    assert again.viewer.id == first.viewer.id
    assert table.controller(TAB1) is again.viewer


def test_moving_to_another_tab_releases_the_old_role_first() -> None:
    table = RoleTable()
    table.attach("a", TAB1, jpeg=False)
    table.attach("b", TAB1, jpeg=False)
    table.take("a")
    moved = table.attach("a", TAB2, jpeg=False)
    assert (moved.left, moved.released, moved.same_surface) == (TAB1, True, False)
    assert table.controller(TAB1) is None
    (watcher,) = table.viewers(TAB1)
    assert table.view_state(watcher, 7) == BrowserView(
        id=7, profile="acme/default", tab=1, controller=None, viewers=1, viewer=watcher.id
    )


def test_one_controller_at_a_time_and_the_old_one_is_refused() -> None:
    table = RoleTable()
    for connection in "abc":
        table.attach(connection, TAB1, jpeg=False)
    table.take("a")
    assert table.input("a", 1) is Verdict.LANDS
    table.take("b")
    assert table.input("a", 2) is Verdict.NOT_CONTROLLER
    assert table.input("b", 1) is Verdict.LANDS  # a new tenure may number lower (O-BR2)
    assert {table.view_state(v, 1).controller for v in table.viewers(TAB1)} == {
        table.viewer_of("b").id  # type: ignore[union-attr]
    }
    assert table.input("z", 1) is Verdict.UNATTACHED


def test_stale_seqs_are_dropped() -> None:
    table = RoleTable()
    table.attach("a", TAB1, jpeg=False)
    table.take("a")
    assert [table.input("a", seq) for seq in (3, 2, 3, 5)] == [
        Verdict.LANDS, Verdict.STALE, Verdict.STALE, Verdict.LANDS,
    ]  # fmt: skip


def test_release_counts_only_a_held_role() -> None:
    table = RoleTable()
    table.attach("a", TAB1, jpeg=False)
    assert not table.release("a")
    table.take("a")
    assert table.release("a")
    assert not table.release("a")
    assert table.take("nobody") is None


def test_layout_is_the_controllers_else_the_longest_watchers() -> None:
    table = RoleTable()
    first = table.attach("a", TAB1, jpeg=False).viewer
    second = table.attach("b", TAB1, jpeg=True).viewer
    first.size = Size(1280, 720, 1.0)
    second.size = Size(1170, 2532, 3.0)
    assert table.layout(TAB1) == Size(1280, 720, 1.0)
    table.take("b")
    assert table.layout(TAB1) == Size(1170, 2532, 3.0)
    assert table.formats(TAB1) == (True, True)
    table.detach("a")
    assert table.formats(TAB1) == (False, True)
    assert table.layout_owner(TAB1) is second


def test_a_gone_profile_detaches_its_viewers() -> None:
    table = RoleTable()
    table.attach("a", TAB1, jpeg=False)
    table.attach("b", ("other/default", 1), jpeg=False)
    assert [v.connection for v in table.forget_profile("acme/default")] == ["a"]
    assert table.surfaces() == {("other/default", 1)}


def test_size_bounds() -> None:
    assert check_size(Size(1, 8192, 0.5)) is None
    assert check_size(Size(0, 10, 1.0)) == "width and height must be 1..8192 device pixels"
    assert check_size(Size(10, 10, 4.5)) == "scale must be 0.5..4"
