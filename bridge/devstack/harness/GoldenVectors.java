// Golden vectors for the codec tests, produced by Kafka 3.9's own classes.
//
// Reads one JSON array of requests on stdin and prints one JSON array of answers, in order;
// with --lines, one request per stdin line and one answer per stdout line (for property tests).
// Requests (the generator, scripts/golden_vectors.py, chooses the inputs):
//   {"kind": "message", "message": "OffsetCommitValue", "version": 3, "fields": {...},
//    "tagged": [[tag, "hex"], ...], "member_tagged": [[[tag, "hex"], ...] per member]}
//     a generated message (__consumer_offsets keys/values, consumer protocol) built from its
//     JSON form by Kafka's JsonConverter, written version-prefixed by MessageUtil; the answer
//     is {"hex": ..., "fields": ...} where "fields" is what Kafka reads back from those bytes.
//   {"kind": "hash", "string": "...", "partitions": [50, ...]}
//     String.hashCode and the group coordinator's partition, Utils.abs(hashCode) % n.
//   {"kind": "order", "keys": [...]}
//     iteration order of java.util.HashMap and Scala 2.13's immutable and mutable HashMap
//     after inserting the keys in the given order, and the keys sorted by String.compareTo.
//   {"kind": "vote", "members": [["member id", ["protocol", ...]], ...]}
//     the protocol the classic group coordinator selects, members joining in the given order:
//     GroupMetadata.selectProtocol (Scala) and ClassicGroup.selectProtocol (Java).
//   {"kind": "znode", "znode": "broker" | "topic" | "state" | "controller" |
//    "controller_epoch" | "cluster_id", "encode": {...}} or {..., "decode": "<json>"}
//     ZooKeeper JSON written by kafka.zk.<X>ZNode.encode from the given fields, or the given
//     JSON as the ZNode's decoder reads it; the answer is {"json": ..., "decoded": {...}}
//     where "decoded" is always what Kafka's decoder reads from "json". The broker JSON's
//     timestamp (the encoder's clock) is replaced by the request's "timestamp".

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kafka.cluster.Broker;
import kafka.cluster.EndPoint;
import kafka.controller.LeaderIsrAndControllerEpoch;
import kafka.controller.ReplicaAssignment;
import kafka.coordinator.group.GroupMetadata;
import kafka.coordinator.group.MemberMetadata;
import org.apache.kafka.common.message.JoinGroupRequestData.JoinGroupRequestProtocol;
import org.apache.kafka.common.message.JoinGroupRequestData.JoinGroupRequestProtocolCollection;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.group.classic.ClassicGroup;
import org.apache.kafka.coordinator.group.classic.ClassicGroupMember;
import org.apache.kafka.coordinator.group.classic.ClassicGroupState;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetricsShard;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.feature.Features;
import org.apache.kafka.common.feature.SupportedVersionRange;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.zookeeper.data.Stat;
import scala.jdk.javaapi.CollectionConverters;

public final class GoldenVectors {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] PACKAGES = {
        "org.apache.kafka.coordinator.group.generated.", "org.apache.kafka.common.message.",
    };

    private GoldenVectors() {}

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--lines")) {
            lines();
            return;
        }
        JsonNode requests = JSON.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8));
        ArrayNode answers = JSON.createArrayNode();
        for (JsonNode r : requests) {
            answers.add(answer(r));
        }
        System.out.write(JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(answers));
        System.out.println();
        System.out.flush();
    }

    /** One request per stdin line, one answer (or {"error": ...}) per stdout line. */
    static void lines() throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            JsonNode answer;
            try {
                answer = answer(JSON.readTree(line));
            } catch (Exception e) {
                answer = JSON.createObjectNode().put("error", String.valueOf(e.getCause() != null ? e.getCause() : e));
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }

    static JsonNode answer(JsonNode r) throws Exception {
        String kind = r.get("kind").asText();
        switch (kind) {
            case "message":
                return message(r);
            case "hash":
                return hash(r);
            case "order":
                return order(r);
            case "znode":
                return ZNodes.answer(r);
            case "vote":
                return vote(r);
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    static Class<?> messageClass(String name) throws ClassNotFoundException {
        for (String p : PACKAGES) {
            try {
                return Class.forName(p + name);
            } catch (ClassNotFoundException e) {
                // try the next package
            }
        }
        throw new ClassNotFoundException(name);
    }

    static ObjectNode message(JsonNode r) throws Exception {
        String name = r.get("message").asText();
        short version = (short) r.get("version").asInt();
        Class<?> cls = messageClass(name);
        Class<?> conv = messageClass(name + "JsonConverter");
        Method read = conv.getMethod("read", JsonNode.class, short.class);
        Method write = conv.getMethod("write", cls, short.class);
        Message msg = (Message) read.invoke(null, r.get("fields"), version);
        addTagged(msg, r.get("tagged"));
        if (r.has("member_tagged")) {
            List<?> members = (List<?>) cls.getMethod("members").invoke(msg);
            for (int i = 0; i < members.size(); i++) {
                addTagged((Message) members.get(i), r.get("member_tagged").get(i));
            }
        }
        byte[] bytes = MessageUtil.toVersionPrefixedBytes(version, msg);
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        short readVersion = buf.getShort();
        Message back =
                (Message) cls.getConstructor(Readable.class, short.class)
                        .newInstance(new ByteBufferAccessor(buf), readVersion);
        if (buf.hasRemaining()) {
            throw new IllegalStateException(name + " left " + buf.remaining() + " bytes unread");
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("hex", hex(bytes));
        answer.set("fields", (JsonNode) write.invoke(null, back, readVersion));
        answer.set("tagged", tagged(back));
        if (r.has("member_tagged")) {
            ArrayNode perMember = answer.putArray("member_tagged");
            for (Object m : (List<?>) cls.getMethod("members").invoke(back)) {
                perMember.add(tagged((Message) m));
            }
        }
        return answer;
    }

    static void addTagged(Message msg, JsonNode tags) {
        if (tags != null) {
            for (JsonNode t : tags) {
                msg.unknownTaggedFields().add(new RawTaggedField(t.get(0).asInt(), hex(t.get(1).asText())));
            }
        }
    }

    static ArrayNode tagged(Message msg) {
        ArrayNode out = JSON.createArrayNode();
        for (RawTaggedField t : msg.unknownTaggedFields()) {
            out.addArray().add(t.tag()).add(hex(t.data()));
        }
        return out;
    }

    static ObjectNode hash(JsonNode r) {
        String s = r.get("string").asText();
        ObjectNode answer = JSON.createObjectNode();
        answer.put("hash_code", s.hashCode());
        ObjectNode partitions = answer.putObject("partition_for");
        for (JsonNode n : r.get("partitions")) {
            partitions.put(n.asText(), Utils.abs(s.hashCode()) % n.asInt());
        }
        return answer;
    }

    static ObjectNode order(JsonNode r) {
        HashMap<String, Integer> jmap = new HashMap<>();
        scala.collection.immutable.HashMap<String, Object> immutable =
                scala.collection.immutable.HashMap$.MODULE$.empty();
        scala.collection.mutable.HashMap<String, Object> mutable =
                new scala.collection.mutable.HashMap<>();
        for (JsonNode k : r.get("keys")) {
            jmap.put(k.asText(), 0);
            immutable = immutable.updated(k.asText(), 0);
            mutable.update(k.asText(), 0);
        }
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode j = answer.putArray("java_hashmap");
        jmap.keySet().forEach(j::add);
        ArrayNode im = answer.putArray("scala_immutable_hashmap");
        immutable.keysIterator().foreach(k -> im.add(k));
        ArrayNode mu = answer.putArray("scala_mutable_hashmap");
        mutable.keysIterator().foreach(k -> mu.add(k));
        List<String> sorted = new ArrayList<>(jmap.keySet());
        Collections.sort(sorted);
        ArrayNode so = answer.putArray("java_sorted");
        sorted.forEach(so::add);
        return answer;
    }

    static ObjectNode vote(JsonNode r) {
        GroupMetadata scalaGroup =
                new GroupMetadata("g", kafka.coordinator.group.Empty$.MODULE$, Time.SYSTEM);
        GroupCoordinatorMetricsShard metrics =
                new GroupCoordinatorMetricsShard(
                        new SnapshotRegistry(new LogContext()),
                        Collections.emptyMap(),
                        new TopicPartition("__consumer_offsets", 0));
        ClassicGroup javaGroup =
                new ClassicGroup(new LogContext(), "g", ClassicGroupState.EMPTY, Time.SYSTEM, metrics);
        for (JsonNode m : r.get("members")) {
            String id = m.get(0).asText();
            List<scala.Tuple2<String, byte[]>> scalaProtocols = new ArrayList<>();
            JoinGroupRequestProtocolCollection javaProtocols = new JoinGroupRequestProtocolCollection();
            for (JsonNode p : m.get(1)) {
                scalaProtocols.add(new scala.Tuple2<>(p.asText(), new byte[0]));
                javaProtocols.add(new JoinGroupRequestProtocol().setName(p.asText()).setMetadata(new byte[0]));
            }
            scalaGroup.add(
                    new MemberMetadata(id, scala.Option.empty(), "c", "/h", 300000, 30000, "consumer",
                            CollectionConverters.asScala(scalaProtocols).toList(), new byte[0]),
                    result -> scala.runtime.BoxedUnit.UNIT);
            javaGroup.add(new ClassicGroupMember(id, java.util.Optional.empty(), "c", "/h", 300000, 30000,
                    "consumer", javaProtocols));
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("scala", scalaGroup.selectProtocol());
        answer.put("java", javaGroup.selectProtocol());
        return answer;
    }

    static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}

/** The kafka.zk ZNode encoders and decoders, called as Kafka's ZooKeeper-mode code calls them. */
final class ZNodes {
    private ZNodes() {}

    static ObjectNode answer(JsonNode r) {
        String znode = r.get("znode").asText();
        byte[] bytes =
                r.has("decode")
                        ? r.get("decode").asText().getBytes(StandardCharsets.UTF_8)
                        : encode(znode, r.get("encode"));
        ObjectNode answer = GoldenVectors.JSON.createObjectNode();
        answer.put("json", new String(bytes, StandardCharsets.UTF_8));
        answer.set("decoded", decode(znode, r, bytes));
        return answer;
    }

    static byte[] encode(String znode, JsonNode f) {
        switch (znode) {
            case "broker":
                String json = new String(brokerInfo(f).toJsonBytes(), StandardCharsets.UTF_8);
                String ts = "\"timestamp\":\"" + f.get("timestamp").asLong() + "\"";
                return json.replaceFirst("\"timestamp\":\"[0-9]+\"", ts)
                        .getBytes(StandardCharsets.UTF_8);
            case "topic":
                return kafka.zk.TopicZNode.encode(optional(f, "topic_id").map(Uuid::fromString)
                        .map(scala.Option::apply).orElse(scala.Option.empty()), assignment(f));
            case "state":
                kafka.api.LeaderAndIsr lai =
                        kafka.api.LeaderAndIsr.apply(
                                f.get("leader").asInt(),
                                f.get("leader_epoch").asInt(),
                                ints(f.get("isr")).toList(),
                                LeaderRecoveryState.of((byte) f.get("leader_recovery_state").asInt()),
                                0);
                return kafka.zk.TopicPartitionStateZNode.encode(
                        new LeaderIsrAndControllerEpoch(lai, f.get("controller_epoch").asInt()));
            case "controller":
                return kafka.zk.ControllerZNode.encode(
                        f.get("brokerid").asInt(), f.get("timestamp").asLong(), f.get("kraft_epoch").asInt());
            case "controller_epoch":
                return kafka.zk.ControllerEpochZNode.encode(f.get("epoch").asInt());
            case "cluster_id":
                return kafka.zk.ClusterIdZNode.toJson(f.get("id").asText());
            default:
                throw new IllegalArgumentException("unknown znode " + znode);
        }
    }

    static JsonNode decode(String znode, JsonNode r, byte[] bytes) {
        ObjectNode d = GoldenVectors.JSON.createObjectNode();
        switch (znode) {
            case "broker":
                int id = r.has("id") ? r.get("id").asInt() : r.get("encode").get("id").asInt();
                kafka.zk.BrokerInfo info = kafka.zk.BrokerIdZNode.decode(id, bytes);
                Broker b = info.broker();
                d.put("id", b.id());
                d.put("version", info.version());
                d.put("jmx_port", info.jmxPort());
                d.put("rack", b.rack().isDefined() ? b.rack().get() : null);
                ArrayNode eps = d.putArray("endpoints");
                for (EndPoint e : CollectionConverters.asJava(b.endPoints())) {
                    eps.addArray().add(e.listenerName().value()).add(e.securityProtocol().name)
                            .add(e.host()).add(e.port());
                }
                ObjectNode feats = d.putObject("features");
                b.features().features().forEach((k, v) -> feats.putArray(k).add(v.min()).add(v.max()));
                return d;
            case "topic":
                kafka.zk.TopicZNode.TopicIdReplicaAssignment t = kafka.zk.TopicZNode.decode("t", bytes);
                d.put("topic_id", t.topicId().isDefined() ? t.topicId().get().toString() : null);
                ObjectNode parts = d.putObject("partitions");
                CollectionConverters.asJava(t.assignment()).forEach((tp, a) -> {
                    ObjectNode p = parts.putObject(Integer.toString(tp.partition()));
                    p.set("replicas", intArray(a.replicas()));
                    p.set("adding", intArray(a.addingReplicas()));
                    p.set("removing", intArray(a.removingReplicas()));
                });
                return d;
            case "state":
                LeaderIsrAndControllerEpoch s =
                        kafka.zk.TopicPartitionStateZNode.decode(bytes, new Stat()).get();
                d.put("leader", s.leaderAndIsr().leader());
                d.put("leader_epoch", s.leaderAndIsr().leaderEpoch());
                d.set("isr", intArray(s.leaderAndIsr().isr()));
                d.put("leader_recovery_state", s.leaderAndIsr().leaderRecoveryState().value());
                d.put("controller_epoch", s.controllerEpoch());
                return d;
            case "controller":
                kafka.zk.ZKControllerRegistration c = kafka.zk.ControllerZNode.decodeController(bytes, 0);
                d.put("brokerid", c.broker());
                d.put("kraft_epoch", c.kraftEpoch().isDefined() ? (Integer) c.kraftEpoch().get() : null);
                return d;
            case "controller_epoch":
                d.put("epoch", kafka.zk.ControllerEpochZNode.decode(bytes));
                return d;
            case "cluster_id":
                d.put("id", kafka.zk.ClusterIdZNode.fromJson(bytes));
                return d;
            default:
                throw new IllegalArgumentException("unknown znode " + znode);
        }
    }

    static kafka.zk.BrokerInfo brokerInfo(JsonNode f) {
        List<EndPoint> eps = new ArrayList<>();
        for (JsonNode e : f.get("endpoints")) {
            eps.add(new EndPoint(e.get(2).isNull() ? null : e.get(2).asText(), e.get(3).asInt(),
                    new ListenerName(e.get(0).asText()), SecurityProtocol.forName(e.get(1).asText())));
        }
        Map<String, SupportedVersionRange> features = new LinkedHashMap<>();
        f.get("features").fields().forEachRemaining(e -> features.put(e.getKey(),
                new SupportedVersionRange((short) e.getValue().get(0).asInt(), (short) e.getValue().get(1).asInt())));
        scala.Option<String> rack = scala.Option.apply(f.get("rack").isNull() ? null : f.get("rack").asText());
        Broker broker = new Broker(f.get("id").asInt(), CollectionConverters.asScala(eps).toList(), rack,
                Features.supportedFeatures(features));
        return new kafka.zk.BrokerInfo(broker, f.get("version").asInt(), f.get("jmx_port").asInt());
    }

    /** An immutable Scala map built by insertion, as the controller's assignments are. */
    static scala.collection.immutable.Map<TopicPartition, ReplicaAssignment> assignment(JsonNode f) {
        scala.collection.immutable.Map<TopicPartition, ReplicaAssignment> out =
                scala.collection.immutable.Map$.MODULE$.empty();
        Iterator<Map.Entry<String, JsonNode>> it = f.get("partitions").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode adding = f.path("adding").path(e.getKey());
            JsonNode removing = f.path("removing").path(e.getKey());
            out = out.updated(new TopicPartition("t", Integer.parseInt(e.getKey())),
                    ReplicaAssignment.apply(ints(e.getValue()).toList(), ints(adding).toList(), ints(removing).toList()));
        }
        return out;
    }

    static scala.collection.mutable.Buffer<Object> ints(JsonNode array) {
        List<Object> out = new ArrayList<>();
        if (array != null) {
            array.forEach(n -> out.add(n.asInt()));
        }
        return CollectionConverters.asScala(out);
    }

    static ArrayNode intArray(scala.collection.Seq<Object> seq) {
        ArrayNode out = GoldenVectors.JSON.createArrayNode();
        for (Object o : CollectionConverters.asJava(seq)) {
            out.add((Integer) o);
        }
        return out;
    }

    static java.util.Optional<String> optional(JsonNode f, String name) {
        JsonNode n = f.get(name);
        return n == null || n.isNull() ? java.util.Optional.empty() : java.util.Optional.of(n.asText());
    }
}
