// Kafka's own Java consumer (kafka-clients 4.x) in a next-generation group (KIP-848,
// group.protocol=consumer), speaking the legacy harness's stdout protocol so tests treat it
// like the other consumers:
//   READY                                         subscribed, polling starts
//   ASSIGNMENT <wall_ms> <member_id> <t:p,...|->   the partitions it owns, after each change
//   MSG <member_id> <topic> <partition> <offset> <wall_ms> <value>
//   EXIT consumed=<n>                             after SIGTERM: committed, left the group
// Arguments: --bootstrap-server H:P --group G --topic T [--topic T2] [--client-id C]
//            [--protocol consumer|classic] [--revoke-delay-ms N] [--prop key=value ...]
// --revoke-delay-ms: the revocation callback takes this long before it returns (a slow
// application committing its work), so the broker waits that long for the revocation.

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class NextGenConsumer {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static volatile boolean stopping = false;
    private static long revokeDelayMs = 0;

    private NextGenConsumer() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("group.protocol", "consumer");
        props.put("client.id", "next-gen-consumer");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "true");
        props.put("auto.commit.interval.ms", "500");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        List<String> topics = new ArrayList<>();
        for (int i = 0; i < args.length; i += 2) {
            String value = args[i + 1];
            switch (args[i]) {
                case "--bootstrap-server" -> props.put("bootstrap.servers", value);
                case "--group" -> props.put("group.id", value);
                case "--topic" -> topics.add(value);
                case "--client-id" -> props.put("client.id", value);
                case "--protocol" -> props.put("group.protocol", value);
                case "--revoke-delay-ms" -> revokeDelayMs = Long.parseLong(value);
                case "--prop" -> {
                    int eq = value.indexOf('=');
                    props.put(value.substring(0, eq), value.substring(eq + 1));
                }
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        KafkaConsumer<byte[], String> consumer = new KafkaConsumer<>(props);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            consumer.wakeup();
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        long consumed = 0;
        String[] shown = {""};
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                if (!partitions.isEmpty() && revokeDelayMs > 0 && !stopping) {
                    try {
                        Thread.sleep(revokeDelayMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                show(consumer, shown, partitions, true);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                show(consumer, shown, partitions, false);
            }
        };
        try {
            consumer.subscribe(topics, listener);
            OUT.println("READY");
            while (!stopping) {
                ConsumerRecords<byte[], String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    break;
                }
                show(consumer, shown, List.of(), false);
                String member = consumer.groupMetadata().memberId();
                StringBuilder lines = new StringBuilder();
                for (ConsumerRecord<byte[], String> r : records) {
                    String value = r.value() == null ? "" : r.value().replace("\n", "\\n");
                    lines.append("MSG ").append(member).append(' ').append(r.topic()).append(' ')
                            .append(r.partition()).append(' ').append(r.offset()).append(' ')
                            .append(System.currentTimeMillis()).append(' ').append(value)
                            .append('\n');
                    consumed++;
                }
                if (lines.length() > 0) {
                    OUT.print(lines);
                    OUT.flush();
                }
            }
            consumer.commitSync();
        } finally {
            consumer.close();  // leaves the group (member epoch -1)
            OUT.println("EXIT consumed=" + consumed);
            done.countDown();
        }
    }

    /** Print the owned partitions when they differ from the last line printed. In the
     * revocation callback the revoked partitions are still in assignment(): they are left
     * out, since the consumer stops fetching them before it acknowledges. */
    static void show(
            KafkaConsumer<byte[], String> consumer,
            String[] shown,
            Collection<TopicPartition> changed,
            boolean revoking) {
        Set<String> owned = new TreeSet<>();
        for (TopicPartition tp : consumer.assignment()) {
            if (!(revoking && changed.contains(tp))) {
                owned.add(tp.topic() + ":" + tp.partition());
            }
        }
        String text = owned.isEmpty() ? "-" : String.join(",", owned);
        if (!text.equals(shown[0])) {
            shown[0] = text;
            OUT.println("ASSIGNMENT " + System.currentTimeMillis() + " "
                    + consumer.groupMetadata().memberId() + " " + text);
        }
    }
}
