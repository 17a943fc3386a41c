// Kafka 4's generated request/response classes (kafka-clients 4.x, "kafka4" classpath) and
// the group coordinator's record classes, as a line-oriented reference for the bridge's own
// definitions of requests kafka-python lacks and of the records of __consumer_offsets.
//
// One JVM serves a test module: each stdin line is a JSON case, answered by one stdout line.
//   {"message": "ConsumerGroupDescribeResponseData", "version": 1, "fields": {...}}
//     the message built from its JSON form by Kafka's JsonConverter and written at that
//     version (body only, no header): {"hex": "..."}
//   {"message": "...", "version": 1, "hex": "..."}
//     the bytes read by Kafka's class (all of them, or an error) and written back as JSON:
//     {"fields": {...}}
// Errors answer {"error": "..."}. An empty line or EOF ends the process.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;

public final class KafkaMessages4 {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PACKAGE = "org.apache.kafka.common.message.";

    private KafkaMessages4() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            ObjectNode answer;
            try {
                answer = answer(JSON.readTree(line));
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                answer = JSON.createObjectNode();
                answer.put("error", cause.toString());
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }

    static ObjectNode answer(JsonNode r) throws Exception {
        String name = r.get("message").asText();
        short version = (short) r.get("version").asInt();
        // a simple name is a request/response's; a qualified one any generated message's
        // (e.g. org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataValue)
        String qualified = name.contains(".") ? name : PACKAGE + name;
        Class<?> cls = Class.forName(qualified);
        Class<?> conv = Class.forName(qualified + "JsonConverter");
        ObjectNode answer = JSON.createObjectNode();
        if (r.has("hex")) {
            ByteBuffer buf = ByteBuffer.wrap(HexFormat.of().parseHex(r.get("hex").asText()));
            Message msg =
                    (Message) cls.getConstructor(Readable.class, short.class)
                            .newInstance(new ByteBufferAccessor(buf), version);
            if (buf.hasRemaining()) {
                throw new IllegalStateException(name + " left " + buf.remaining() + " bytes");
            }
            Method write = conv.getMethod("write", cls, short.class);
            answer.set("fields", (JsonNode) write.invoke(null, msg, version));
            return answer;
        }
        Method read = conv.getMethod("read", JsonNode.class, short.class);
        Message msg = (Message) read.invoke(null, r.get("fields"), version);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buf = ByteBuffer.allocate(msg.size(cache, version));
        msg.write(new ByteBufferAccessor(buf), cache, version);
        answer.put("hex", HexFormat.of().formatHex(buf.array()));
        return answer;
    }
}
