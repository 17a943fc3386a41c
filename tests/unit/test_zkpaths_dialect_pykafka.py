"""pykafka's dialect against an independent reference: pykafka 2.8.0's own formatting.

The reference builds paths and data the way ``pykafka/balancedconsumer.py`` does
(``'/consumers/{group}/owners/{topic}'.format(...)`` with the topic name as bytes, then
``"%s/%s-%s" % (topic_path, leader, partition)``; the registration is the topic's bytes),
and owner-name validity by splitting and int-parsing, not by the codec's regex.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import zkpaths
from zkpaths.dialects import PYKAFKA, SCALA, decode_member, pykafka

TOPICS = st.from_regex(r"[a-zA-Z0-9._-]{1,60}", fullmatch=True).filter(
    lambda t: t not in (".", "..")
)
IDS = st.integers(0, 2**31 - 1)


def reference_owner_path(group: str, topic: str, leader: int, partition: int) -> str:
    topic_path = "/consumers/{group}/owners/{topic}".format(group=group, topic=topic.encode())  # noqa: UP032
    return "%s/%s-%s" % (topic_path, leader, partition)  # noqa: UP031 - pykafka's own form


def reference_owner_name(name: str) -> tuple[int, int] | None:
    parts = name.split("-")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    leader, partition = (int(p) for p in parts)
    if any(str(int(p)) != p for p in parts) or max(leader, partition) > 2**31 - 1:
        return None
    return leader, partition


@given(TOPICS, IDS, IDS)
def test_owner_paths_as_pykafka_writes_them(topic, leader, partition):
    path = reference_owner_path("g", topic, leader, partition)
    *_, dirname, name = path.split("/")
    assert pykafka.topic_of_owners_dir(dirname) == topic
    assert pykafka.is_bytes_owners_dir(dirname)
    assert pykafka.decode_owner_name(name) == pykafka.OwnerName(leader, partition)
    assert pykafka.encode_owner_name(leader, partition) == name
    assert pykafka.owners_dir_name(topic) == dirname
    # under Python 2 the dir is the plain topic, which is not the bytes spelling
    assert pykafka.topic_of_owners_dir(topic) == topic
    assert not pykafka.is_bytes_owners_dir(topic)


@given(st.text(max_size=30))
def test_owner_names_accepted_exactly_as_the_reference_says(name):
    expected = reference_owner_name(name)
    if expected is None:
        with pytest.raises(zkpaths.ZkPathError, match="unknown pykafka owner node name"):
            pykafka.decode_owner_name(name, path=f"/consumers/g/owners/t/{name}")
    else:
        assert pykafka.decode_owner_name(name) == pykafka.OwnerName(*expected)
    assert pykafka.looks_like_owner_name(name) == (expected is not None)


@pytest.mark.parametrize("name", ["x-y-z", "1-2-3", "a-1", "1-", "-1", "01-2", "1-2 ", "1_2"])
def test_unknown_owner_formats_are_named(name):
    path = f"/consumers/g/owners/t/{name}"
    with pytest.raises(zkpaths.ZkPathError) as err:
        pykafka.decode_owner_name(name, path=path)
    assert err.value.path == path and repr(name) in err.value.reason


HOSTS = st.from_regex(r"[a-z0-9.-]{1,30}", fullmatch=True)


@given(TOPICS, HOSTS, st.uuids(version=4))
def test_registration_is_the_topic_name(topic, host, uuid4):
    consumer_id = "{hostname}:{uuid}".format(hostname=host, uuid=uuid4)  # noqa: UP032
    assert pykafka.consumer_id(host, str(uuid4)) == consumer_id
    data = topic.encode()  # pykafka: create(path, self._topic.name)
    member = decode_member(consumer_id, data)
    assert (member.dialect, member.topics, member.registration) == (PYKAFKA, (topic,), None)
    assert pykafka.encode_registration(topic) == data


@given(st.dictionaries(TOPICS, st.integers(1, 5), min_size=1, max_size=4))
def test_json_registrations_stay_scala(subscription):
    reg = zkpaths.ConsumerRegistration(subscription, timestamp_ms=1)
    member = decode_member("c", zkpaths.encode_consumer_registration(reg))
    assert member.dialect == SCALA and member.registration == reg
    assert member.topics == tuple(sorted(subscription))


@pytest.mark.parametrize("data", [b"", b"not a topic!", b"\xff\xfe", b"a" * 300, b"b'quoted'"])
def test_bad_registrations_are_codec_errors(data):
    cid = "host:0f0e0d0c-0b0a-4908-8706-050403020100"
    with pytest.raises(zkpaths.CodecError):
        decode_member(cid, data, path=f"/consumers/g/ids/{cid}")


@given(TOPICS, st.text(min_size=1, max_size=40).filter(lambda c: "/" not in c))
def test_a_bare_name_under_another_id_is_a_bad_json_registration(topic, consumer_id):
    """Only pykafka's <hostname>:<uuid4> ids are read as pykafka; garbage elsewhere is reported."""
    assume(not pykafka._CONSUMER_ID.fullmatch(consumer_id))
    with pytest.raises(zkpaths.CodecError, match="bad consumer registration"):
        decode_member(consumer_id, topic.encode())
