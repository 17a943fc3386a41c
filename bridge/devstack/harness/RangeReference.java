// Kafka's own RangeAssignor (kafka-clients 3.9) as a line-oriented reference for tests.
//
// One JVM serves a whole test session: each stdin line is a JSON case
//   {"members": [{"id": "m1", "instance": "i1" | null, "topics": ["t"]}, ...],
//    "partitions": {"t": 3}}
// with the members in the order the broker lists them (the map handed to the assignor keeps
// it), and the answer is one stdout line: {"m1": [["t", 0], ["t", 1]], ...}, or
// {"error": "..."} when the case cannot be run. An empty line or EOF ends the process.
// Topics absent from "partitions" are unknown to the cluster metadata, as for a real client.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public final class RangeReference {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Node NODE = new Node(0, "localhost", 9092);

    private RangeReference() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            String answer;
            try {
                answer = JSON.writeValueAsString(assign(JSON.readTree(line)));
            } catch (Exception e) {
                ObjectNode err = JSON.createObjectNode();
                err.put("error", e.toString());
                answer = JSON.writeValueAsString(err);
            }
            out.println(answer);
        }
    }

    static ObjectNode assign(JsonNode request) {
        Map<String, Subscription> members = new LinkedHashMap<>();
        for (JsonNode m : request.get("members")) {
            List<String> topics = new ArrayList<>();
            m.get("topics").forEach(t -> topics.add(t.asText()));
            Subscription s = new Subscription(topics);
            JsonNode instance = m.get("instance");
            if (instance != null && !instance.isNull()) {
                s.setGroupInstanceId(Optional.of(instance.asText()));
            }
            members.put(m.get("id").asText(), s);
        }
        List<PartitionInfo> partitions = new ArrayList<>();
        Iterator<Map.Entry<String, JsonNode>> counts = request.get("partitions").fields();
        while (counts.hasNext()) {
            Map.Entry<String, JsonNode> e = counts.next();
            for (int p = 0; p < e.getValue().asInt(); p++) {
                partitions.add(
                        new PartitionInfo(e.getKey(), p, NODE, new Node[] {NODE}, new Node[] {NODE}));
            }
        }
        Cluster cluster =
                new Cluster(
                        "c",
                        Collections.singletonList(NODE),
                        partitions,
                        Collections.emptySet(),
                        Collections.emptySet());
        Map<String, Assignment> result =
                new RangeAssignor()
                        .assign(cluster, new GroupSubscription(members))
                        .groupAssignment();
        ObjectNode answer = JSON.createObjectNode();
        for (Map.Entry<String, Assignment> e : result.entrySet()) {
            ArrayNode owned = answer.putArray(e.getKey());
            for (TopicPartition tp : e.getValue().partitions()) {
                owned.addArray().add(tp.topic()).add(tp.partition());
            }
        }
        return answer;
    }
}
