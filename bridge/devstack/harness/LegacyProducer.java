/*
 * Test harness for kafka-zk-bridge: drives the Java producer of Kafka 0.10.2.2
 * (org.apache.kafka.clients.producer.KafkaProducer from kafka-clients 0.10.2.2, the producer
 * 0.10 applications used; it sends Produce v2, message format v1) and reports each
 * acknowledgement on stdout, one flushed line per event.
 *
 * Build (default package, Java 8 source level):
 *   javac -cp '<legacy classpath>' -d OUT bridge/devstack/harness/LegacyProducer.java
 * Run:
 *   java -cp 'OUT:<legacy classpath>' LegacyProducer --bootstrap-servers HOST:PORT --topic T \
 *        --count 100 [--prefix p] [--partition N] [--compression none|gzip|snappy|lz4] \
 *        [--acks 0|1|all] [--timestamp-base MS] [--value-bytes N] [--quiet true]
 *        [--prop key=value]...
 *
 * Message i (0 <= i < count) has key "<prefix>-k<i>" and value "<prefix>-v<i>" (UTF-8) and,
 * with --timestamp-base, the timestamp base + i (else the producer's clock). With
 * --value-bytes N the value is padded to N bytes with text (benchmarks).
 *
 * stdout protocol (fields separated by single spaces):
 *   SENT <i> <topic> <partition> <offset> <timestamp>   message i acknowledged (offset -1
 *                                                       with acks=0: the producer gets none)
 *   ERROR <i> <exception text>                          message i failed (or i = -1: setup)
 *   STATS start_ms=<t> end_ms=<t> bytes=<n>              with --quiet true instead of SENT
 *                                                       lines: wall clock before the first
 *                                                       send and after flush(), key+value bytes
 *   EXIT sent=<n> failed=<m>                            last line, after flush() and close()
 * Exit status: 0 when every message was acknowledged, 2 otherwise, 64 on bad arguments.
 */

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.io.UnsupportedEncodingException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class LegacyProducer {

    private static PrintStream out;

    private String bootstrap;
    private String topic;
    private long count = -1;
    private String prefix = "m";
    private Integer partition;
    private String compression = "none";
    private String acks = "all";
    private Long timestampBase;
    private String logLevel = "WARN";
    private int valueBytes = 0;
    private boolean quiet = false;
    private final Map<String, String> extraProps = new LinkedHashMap<String, String>();

    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();

    static void emit(String line) {
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }

    static String oneLine(Throwable t) {
        String s = String.valueOf(t);
        Throwable c = t.getCause();
        if (c != null && c != t) {
            s += " caused by " + c;
        }
        return s.replace('\n', ' ').replace('\r', ' ');
    }

    private static void usage(String problem) {
        System.err.println("LegacyProducer: " + problem);
        System.err.println("usage: LegacyProducer --bootstrap-servers HOST:PORT[,...] --topic T"
                + " --count N [--prefix P] [--partition N] [--compression none|gzip|snappy|lz4]"
                + " [--acks 0|1|all] [--timestamp-base MS] [--log-level WARN]"
                + " [--prop key=value]...");
        System.exit(64);
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                usage("missing value for " + a);
            }
            String val = args[++i];
            switch (a) {
                case "--bootstrap-servers": bootstrap = val; break;
                case "--topic": topic = val; break;
                case "--count": count = Long.parseLong(val); break;
                case "--prefix": prefix = val; break;
                case "--partition": partition = Integer.valueOf(val); break;
                case "--compression": compression = val; break;
                case "--acks": acks = val; break;
                case "--timestamp-base": timestampBase = Long.valueOf(val); break;
                case "--log-level": logLevel = val; break;
                case "--value-bytes": valueBytes = Integer.parseInt(val); break;
                case "--quiet": quiet = Boolean.parseBoolean(val); break;
                case "--prop": {
                    int e = val.indexOf('=');
                    if (e <= 0) {
                        usage("--prop needs key=value, got " + val);
                    }
                    extraProps.put(val.substring(0, e), val.substring(e + 1));
                    break;
                }
                default: usage("unknown option " + a);
            }
        }
        if (bootstrap == null) usage("--bootstrap-servers is required");
        if (topic == null) usage("--topic is required");
        if (count < 0) usage("--count is required");
    }

    Properties producerProps() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", acks);
        p.put("compression.type", compression);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("client.id", "legacy-producer-0.10.2.2");
        p.put("max.block.ms", "60000");
        p.put("linger.ms", "5");
        p.put("retries", "5");
        // retries must not reorder what one partition receives
        p.put("max.in.flight.requests.per.connection", "1");
        p.putAll(extraProps); // --prop wins
        return p;
    }

    private void configureLogging() {
        if (System.getProperty("log4j.configuration") != null) {
            return;
        }
        org.apache.log4j.LogManager.resetConfiguration();
        org.apache.log4j.Logger root = org.apache.log4j.Logger.getRootLogger();
        root.addAppender(new org.apache.log4j.ConsoleAppender(
                new org.apache.log4j.PatternLayout("%d{ISO8601} %-5p [%t] %c: %m%n"), "System.err"));
        root.setLevel(org.apache.log4j.Level.toLevel(logLevel, org.apache.log4j.Level.WARN));
    }

    private Callback callback(final long index) {
        return new Callback() {
            @Override
            public void onCompletion(RecordMetadata md, Exception e) {
                if (e != null) {
                    failed.incrementAndGet();
                    emit("ERROR " + index + " " + oneLine(e));
                    return;
                }
                sent.incrementAndGet();
                if (quiet) {
                    return;
                }
                emit("SENT " + index + " " + md.topic() + " " + md.partition() + " " + md.offset()
                        + " " + md.timestamp());
            }
        };
    }

    /** The value padded to --value-bytes with text (half compressible, as log lines are). */
    private byte[] padded(byte[] value) {
        if (value.length >= valueBytes) {
            return value;
        }
        byte[] out = new byte[valueBytes];
        System.arraycopy(value, 0, out, 0, value.length);
        for (int i = value.length; i < valueBytes; i++) {
            out[i] = (byte) ((i % 7 == 0) ? ' ' : 'a' + ((i * 31 + value.length) % 26));
        }
        return out;
    }

    int run() {
        configureLogging();
        KafkaProducer<byte[], byte[]> producer;
        try {
            producer = new KafkaProducer<byte[], byte[]>(producerProps());
        } catch (Throwable t) {
            emit("ERROR -1 " + oneLine(t));
            emit("EXIT sent=0 failed=" + count);
            return 2;
        }
        long startMs = System.currentTimeMillis();
        long bytes = 0;
        try {
            for (long i = 0; i < count; i++) {
                byte[] key = (prefix + "-k" + i).getBytes(StandardCharsets.UTF_8);
                byte[] value = padded((prefix + "-v" + i).getBytes(StandardCharsets.UTF_8));
                bytes += key.length + value.length;
                Long ts = timestampBase == null ? null : timestampBase + i;
                producer.send(new ProducerRecord<byte[], byte[]>(topic, partition, ts, key, value),
                        callback(i));
            }
            producer.flush();
        } catch (Throwable t) {
            emit("ERROR -1 " + oneLine(t));
        } finally {
            producer.close();
        }
        if (quiet) {
            emit("STATS start_ms=" + startMs + " end_ms=" + System.currentTimeMillis() + " bytes="
                    + bytes);
        }
        long ok = sent.get();
        emit("EXIT sent=" + ok + " failed=" + (count - ok));
        return ok == count ? 0 : 2;
    }

    public static void main(String[] args) {
        try {
            out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        } catch (UnsupportedEncodingException e) {
            throw new AssertionError(e);
        }
        LegacyProducer h = new LegacyProducer();
        h.parse(args);
        int code = h.run();
        out.flush();
        System.exit(code);
    }
}
