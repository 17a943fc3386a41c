"""Groups whose decision cannot change: a reconcile pass reading them again skips them.

At 10,000 groups a safety-net pass that found nothing to change took as long as a cold
start (187 s): every group was decided and planned against its nodes again, though its
Kafka view, its nodes and the topics were all as when it was last written. A group's
decision is a pure function of those (``decide.groups``); so once a decision was written
in full, the group is *settled* until one of them changes:

- its Kafka view: a read that shows something new puts it in the tick's scope anyway;
- its nodes: the background verification reads them again, and a difference (someone
  else's change, a refused write) unsettles it and puts it in the next tick's scope;
- the topics' partition counts, or the shares held: every group is unsettled.

A mixed group (old consumers registered, proxies standing for them) changes whenever its
old consumers commit, join or leave, and was decided every tick for that: twenty such groups
were most of each tick in ``bench.fleet`` while one of them committed. But the watches below
``/consumers/<g>`` say exactly when its ZooKeeper side changes (``GroupReads.unchanged``),
so it too is left alone (:meth:`quiet_mixed`) once its last decision was written with
nothing left to copy into Kafka, and while its view, its storage-mode record, its ZooKeeper
side and the topics are as that decision read them and nothing of it waits on the clock or
on a proxy (``Coexistence.at_rest``: a held SyncGroup, a fence waiting for its forward
offset to stand, a proxy not synced). Every resync decides every mixed group again.

Other groups that someone else changes every moment (a storage mode other than kafka
without old consumers) are decided every tick whatever this says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class SettledGroups:
    """The groups whose last decision was written in full and cannot change yet."""

    def __init__(self) -> None:
        self.groups: set[str] = set()
        self._partitions: Mapping[str, int] | None = None
        #: groups found changed in ZooKeeper: decided in the next tick
        self.due: set[str] = set()
        #: the due groups a tick took: due no more once that tick wrote (``written``)
        self._taken: set[str] = set()
        #: mixed groups written in full: (view, storage-mode record) their decision read
        self.mixed: dict[str, tuple[object, object]] = {}

    def unchanged(self, same_view: Iterable[str]) -> set[str]:
        """Of the groups read again with the same view, the settled ones: nothing to do."""
        return self.groups.intersection(same_view)

    def deciding(self, groups: Iterable[str]) -> None:
        """``groups`` are decided in this tick: settled again only once written."""
        self.groups.difference_update(groups)
        for g in groups:
            self.mixed.pop(g, None)

    def written(self, groups: Iterable[str]) -> None:
        """The tick wrote its decisions: ``groups`` are settled, the due ones it took done."""
        self.groups.update(groups)
        self.due -= self._taken
        self._taken = set()

    def drifted(self, groups: Iterable[str]) -> None:
        """Their nodes were not as known: decided again in the next tick."""
        groups = set(groups)
        self.groups -= groups
        self.due |= groups
        for g in groups:
            self.mixed.pop(g, None)

    def topics(self, partitions: Mapping[str, int]) -> None:
        """The topics' partition counts as read now; a change unsettles every group."""
        if partitions is not self._partitions and partitions != self._partitions:
            self.forget()
        self._partitions = partitions

    def forget(self) -> None:
        """The shares held changed (others wrote some groups' nodes since), the topics did,
        or a resync wants every mixed group decided again."""
        self.groups.clear()
        self.mixed.clear()

    def mixed_written(self, decided: Mapping[str, tuple[object, object]]) -> None:
        """The tick wrote these mixed groups' decisions in full, made on (view, record)."""
        self.mixed.update(decided)

    def quiet_mixed(
        self,
        candidates: Iterable[str],
        views: Mapping[str, object],
        records: Mapping[str, object],
    ) -> set[str]:
        """Of ``candidates`` (mixed groups whose ZooKeeper side and hand-over stand as
        when last decided), those written in full on the view and record they have now."""
        out = set()
        for g in candidates:
            at = self.mixed.get(g)
            if at is None:
                continue
            view, record = at
            now = views.get(g)
            if (now is view or now == view) and records.get(g) == record:
                out.add(g)
        return out

    def take_due(self) -> set[str]:
        """The groups due now; they stay due until a tick that took them wrote (a tick
        that failed left them for the next one, not for the next pass)."""
        self._taken = set(self.due)
        return set(self._taken)
