// Golden vectors for the codec tests, produced by Kafka 3.9's own classes.
//
// Reads one JSON array of requests on stdin and prints one JSON array of answers, in order.
// Requests (the generator, scripts/golden_vectors.py, chooses the inputs):
//   {"kind": "message", "message": "OffsetCommitValue", "version": 3, "fields": {...},
//    "tagged": [[tag, "hex"], ...]}
//     a generated message (__consumer_offsets keys/values, consumer protocol) built from its
//     JSON form by Kafka's JsonConverter, written version-prefixed by MessageUtil; the answer
//     is {"hex": ..., "fields": ...} where "fields" is what Kafka reads back from those bytes.
//   {"kind": "hash", "string": "...", "partitions": [50, ...]}
//     String.hashCode and the group coordinator's partition, Utils.abs(hashCode) % n.
//   {"kind": "order", "keys": [...]}
//     iteration order of java.util.HashMap and Scala 2.13's immutable and mutable HashMap
//     after inserting the keys in the given order, and the keys sorted by String.compareTo.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.utils.Utils;

public final class GoldenVectors {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final String[] PACKAGES = {
        "org.apache.kafka.coordinator.group.generated.", "org.apache.kafka.common.message.",
    };

    private GoldenVectors() {}

    public static void main(String[] args) throws Exception {
        JsonNode requests = JSON.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8));
        ArrayNode answers = JSON.createArrayNode();
        for (JsonNode r : requests) {
            String kind = r.get("kind").asText();
            switch (kind) {
                case "message":
                    answers.add(message(r));
                    break;
                case "hash":
                    answers.add(hash(r));
                    break;
                case "order":
                    answers.add(order(r));
                    break;
                default:
                    throw new IllegalArgumentException("unknown kind " + kind);
            }
        }
        System.out.write(JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(answers));
        System.out.println();
        System.out.flush();
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
        if (r.has("tagged")) {
            for (JsonNode t : r.get("tagged")) {
                msg.unknownTaggedFields().add(new RawTaggedField(t.get(0).asInt(), hex(t.get(1).asText())));
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
        ArrayNode tagged = answer.putArray("tagged");
        for (RawTaggedField t : back.unknownTaggedFields()) {
            tagged.addArray().add(t.tag()).add(hex(t.data()));
        }
        return answer;
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
