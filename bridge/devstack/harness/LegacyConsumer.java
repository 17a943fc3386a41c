/*
 * Test harness for kafka-zk-bridge: drives the OLD Scala high-level consumer
 * (kafka.consumer.ZookeeperConsumerConnector, Kafka 0.10.2.x / 0.11.0.x) configured with
 * nothing but zookeeper.connect, and reports what it consumed on stdout, one flushed line per
 * event. Python tests start it with subprocess and parse stdout. It compiles against the
 * 0.8.2.2 consumer too (the message timestamp, new in 0.10, is looked up reflectively).
 *
 * Build (default package, Java 8 source level so any JDK >= 8 can build it):
 *   javac -cp '/tmp/ljars/*' -d OUT bridge/devstack/harness/LegacyConsumer.java
 * Run:
 *   java -Xmx256m -cp 'OUT:/tmp/ljars/*' LegacyConsumer --zookeeper 127.0.0.1:2181/chroot \
 *        --group g --topic t --streams 2 --prop auto.offset.reset=smallest --idle-exit-ms 5000
 *
 * stdout protocol (fields separated by single spaces; the value is the rest of the line):
 *   CONSUMER <consumer_id>                 the consumer id registered under /consumers/<g>/ids
 *   STREAM <index> <thread_id> <topic|*>   one per stream, before READY (thread_id is "?" if
 *                                          it could not be recovered; topic "*" for --whitelist)
 *   READY                                  createMessageStreams returned (first rebalance done)
 *   MSG <thread> <topic> <partition> <offset> <wall_ms> <value>
 *                                          <thread> is the owning thread id (<consumer_id>-<n>),
 *                                          or the stream index if the id was not recovered;
 *                                          <value> is UTF-8 with '\' -> "\\", LF -> "\n",
 *                                          CR -> "\r"; a null value prints as "\N".
 *   MSGK <thread> <topic> <partition> <offset> <wall_ms> <timestamp> <timestamp_type> <key> <value>
 *                                          instead of MSG with --details: the message's own
 *                                          timestamp and type (-1 NO_TIMESTAMP_TYPE for magic
 *                                          0 and 0.8 clients), the key as hex ("\N" if null,
 *                                          "-" if empty)
 *   ERROR <where> <exception text>         a worker or the connector failed
 *   STOP <reason>                          shutdown started (max-messages|idle|signal|error|streams-ended)
 *   STATS first_ms=<t> last_ms=<t> bytes=<n>
 *                                          with --quiet true (benchmarks), instead of one line
 *                                          per message: wall clock of the first and last message
 *                                          taken, and the key+value bytes consumed; before EXIT
 *   EXIT consumed=<n>                      last line; printed after commitOffsets()+shutdown()
 * Several connectors (groups) in one JVM: their options separated by "--and", each complete
 * (--zookeeper, --group, ...); each prints its own CONSUMER, STREAM, READY and EXIT lines, and
 * its MSG lines carry its own thread ids (<group>_...). The first connector's --log-level wins.
 * Exit status: 0 normally (including after SIGTERM, where the JVM reports 143), 2 on error,
 * 64 on bad arguments.
 */

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.io.UnsupportedEncodingException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import kafka.consumer.Consumer;
import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerIterator;
import kafka.consumer.ConsumerTimeoutException;
import kafka.consumer.KafkaStream;
import kafka.consumer.Whitelist;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.message.MessageAndMetadata;

public final class LegacyConsumer {

    private static PrintStream out;

    // ------------------------------------------------------------------ options
    private String zookeeper;
    private String group;
    private final List<String> topics = new ArrayList<String>();
    private String whitelist;
    private int streams = 1;
    private String consumerId;
    private String offsetsStorage = "zookeeper";
    private String dualCommit;
    private String autoCommitEnable;
    private String autoCommitIntervalMs;
    private String autoOffsetReset;
    private long maxMessages = -1;
    private long idleExitMs = -1;
    private String rebalanceMaxRetries;
    private String rebalanceBackoffMs;
    private String zkSessionTimeoutMs;
    private int pollMs = 200;
    private boolean commitOnExit = true;
    private String logLevel = "WARN";
    private boolean details = false;
    private boolean quiet = false;
    private final Map<String, String> extraProps = new LinkedHashMap<String, String>();

    // ------------------------------------------------------------------ state
    private volatile ConsumerConnector connector;
    private final List<Thread> workers = new ArrayList<Thread>();
    private final AtomicBoolean stopping = new AtomicBoolean(false);
    private final CountDownLatch stopRequested = new CountDownLatch(1);
    private final CountDownLatch finished = new CountDownLatch(1);
    private final AtomicLong reserved = new AtomicLong();
    private final AtomicLong consumed = new AtomicLong();
    private final AtomicLong consumedBytes = new AtomicLong();
    private final AtomicLong firstMs = new AtomicLong(-1);
    private final AtomicLong lastMs = new AtomicLong(-1);
    private final AtomicLong lastActivity = new AtomicLong(System.currentTimeMillis());
    private volatile String stopReason = "signal";
    private volatile int exitCode = 0;
    private volatile boolean exited = false;

    // ------------------------------------------------------------------ output
    static void emit(String line) {
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }

    static String escape(byte[] value) {
        if (value == null) {
            return "\\N";
        }
        String s = new String(value, StandardCharsets.UTF_8);
        StringBuilder sb = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                default: sb.append(c);
            }
        }
        return sb.toString();
    }

    static String hex(byte[] b) {
        if (b == null) {
            return "\\N";
        }
        StringBuilder sb = new StringBuilder(2 * b.length + 1);
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.length() == 0 ? "-" : sb.toString();
    }

    /** "<timestamp> <type>" of a 0.10+ message (MessageAndMetadata.timestamp()), else "-1 NONE". */
    static String timestampOf(MessageAndMetadata<byte[], byte[]> m) {
        try {
            Object ts = m.getClass().getMethod("timestamp").invoke(m);
            Object type = m.getClass().getMethod("timestampType").invoke(m);
            return ts + " " + type;
        } catch (ReflectiveOperationException e) {
            return "-1 NONE";
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

    // ------------------------------------------------------------------ args
    private static void usage(String problem) {
        System.err.println("LegacyConsumer: " + problem);
        System.err.println("usage: LegacyConsumer --zookeeper HOST:PORT[/chroot] --group G"
                + " (--topic T [--topic T2 | T,T2] | --whitelist REGEX) [--streams N]"
                + " [--consumer-id ID] [--offsets-storage zookeeper|kafka] [--dual-commit true|false]"
                + " [--auto-commit-enable true|false] [--auto-commit-interval-ms MS]"
                + " [--auto-offset-reset smallest|largest] [--max-messages N] [--idle-exit-ms MS]"
                + " [--rebalance-max-retries N] [--rebalance-backoff-ms MS] [--zk-session-timeout-ms MS]"
                + " [--poll-ms MS] [--commit-on-exit true|false] [--log-level WARN]"
                + " [--details true|false] [--quiet true|false]"
                + " [--prop key=value]...");
        System.exit(64);
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String val;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                val = a.substring(eq + 1);
                a = a.substring(0, eq);
            } else if (a.equals("--help") || a.equals("-h")) {
                usage("help");
                return;
            } else {
                if (i + 1 >= args.length) {
                    usage("missing value for " + a);
                }
                val = args[++i];
            }
            switch (a) {
                case "--zookeeper": zookeeper = val; break;
                case "--group": group = val; break;
                case "--topic":
                    for (String t : val.split(",")) {
                        if (!t.trim().isEmpty()) {
                            topics.add(t.trim());
                        }
                    }
                    break;
                case "--whitelist": whitelist = val; break;
                case "--streams": streams = Integer.parseInt(val); break;
                case "--consumer-id": consumerId = val; break;
                case "--offsets-storage": offsetsStorage = val; break;
                case "--dual-commit": dualCommit = val; break;
                case "--auto-commit-enable": autoCommitEnable = val; break;
                case "--auto-commit-interval-ms": autoCommitIntervalMs = val; break;
                case "--auto-offset-reset": autoOffsetReset = val; break;
                case "--max-messages": maxMessages = Long.parseLong(val); break;
                case "--idle-exit-ms": idleExitMs = Long.parseLong(val); break;
                case "--rebalance-max-retries": rebalanceMaxRetries = val; break;
                case "--rebalance-backoff-ms": rebalanceBackoffMs = val; break;
                case "--zk-session-timeout-ms": zkSessionTimeoutMs = val; break;
                case "--poll-ms": pollMs = Integer.parseInt(val); break;
                case "--commit-on-exit": commitOnExit = Boolean.parseBoolean(val); break;
                case "--log-level": logLevel = val; break;
                case "--details": details = Boolean.parseBoolean(val); break;
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
        if (zookeeper == null) usage("--zookeeper is required");
        if (group == null) usage("--group is required");
        if (topics.isEmpty() == (whitelist == null)) usage("give --topic or --whitelist (not both)");
        if (streams < 1) usage("--streams must be >= 1");
    }

    Properties consumerProps() {
        Properties p = new Properties();
        p.put("zookeeper.connect", zookeeper);
        p.put("group.id", group);
        p.put("offsets.storage", offsetsStorage);
        p.put("consumer.timeout.ms", Integer.toString(pollMs));
        if (consumerId != null) p.put("consumer.id", consumerId);
        if (dualCommit != null) p.put("dual.commit.enabled", dualCommit);
        if (autoCommitEnable != null) p.put("auto.commit.enable", autoCommitEnable);
        if (autoCommitIntervalMs != null) p.put("auto.commit.interval.ms", autoCommitIntervalMs);
        if (autoOffsetReset != null) p.put("auto.offset.reset", autoOffsetReset);
        if (rebalanceMaxRetries != null) p.put("rebalance.max.retries", rebalanceMaxRetries);
        if (rebalanceBackoffMs != null) p.put("rebalance.backoff.ms", rebalanceBackoffMs);
        if (zkSessionTimeoutMs != null) p.put("zookeeper.session.timeout.ms", zkSessionTimeoutMs);
        p.putAll(extraProps); // --prop wins
        return p;
    }

    // ------------------------------------------------------------------ log4j
    private void configureLogging() {
        if (System.getProperty("log4j.configuration") != null) {
            return; // caller supplied a config file
        }
        org.apache.log4j.LogManager.resetConfiguration();
        org.apache.log4j.Logger root = org.apache.log4j.Logger.getRootLogger();
        org.apache.log4j.ConsoleAppender app = new org.apache.log4j.ConsoleAppender(
                new org.apache.log4j.PatternLayout("%d{ISO8601} %-5p [%t] %c: %m%n"), "System.err");
        root.addAppender(app);
        root.setLevel(org.apache.log4j.Level.toLevel(logLevel, org.apache.log4j.Level.WARN));
    }

    // ------------------------------------------------------------------ thread ids
    private static Field findField(Class<?> cls, String name) {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                String n = f.getName();
                if (n.equals(name) || n.endsWith("$$" + name)) {
                    f.setAccessible(true);
                    return f;
                }
            }
        }
        return null;
    }

    private static Object get(Object obj, String name) throws Exception {
        Field f = findField(obj.getClass(), name);
        if (f == null) {
            throw new NoSuchFieldException(obj.getClass().getName() + "." + name);
        }
        return f.get(obj);
    }

    /** The Scala connector behind the Java facade (kafka.consumer.ZookeeperConsumerConnector). */
    private Object underlying() {
        try {
            return get(connector, "underlying");
        } catch (Exception e) {
            return null;
        }
    }

    private String consumerIdString() {
        Object u = underlying();
        if (u == null) return null;
        try {
            return (String) u.getClass().getMethod("consumerIdString").invoke(u);
        } catch (Exception e) {
            return null;
        }
    }

    /**
     * Recover "<consumer_id>-<n>" for a stream: KafkaStream.queue is the same queue object the
     * connector stores in topicThreadIdAndQueues under (topic, ConsumerThreadId). Best effort.
     */
    private String threadIdOf(KafkaStream<byte[], byte[]> stream) {
        try {
            Object queue = get(stream, "queue");
            Object pool = get(underlying(), "topicThreadIdAndQueues");
            Map<?, ?> m = (Map<?, ?>) get(pool, "pool");
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (e.getValue() == queue) {
                    scala.Tuple2<?, ?> key = (scala.Tuple2<?, ?>) e.getKey();
                    return String.valueOf(key._2());
                }
            }
        } catch (Throwable t) {
            // fall through
        }
        return null;
    }

    // ------------------------------------------------------------------ stopping
    void requestStop(String reason) {
        if (stopping.compareAndSet(false, true)) {
            stopReason = reason;
            stopRequested.countDown();
        }
    }

    /** Idempotent: stop workers, commit, shut the connector down, print EXIT. */
    synchronized void shutdown() {
        if (exited) return;
        requestStop("signal");
        emit("STOP " + stopReason);
        long deadline = System.currentTimeMillis() + Math.max(5000L, 10L * pollMs);
        for (Thread w : workers) {
            long left = deadline - System.currentTimeMillis();
            if (left > 0) {
                try {
                    w.join(left);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        ConsumerConnector c = connector;
        if (c != null) {
            if (commitOnExit) {
                try {
                    c.commitOffsets();
                } catch (Throwable t) {
                    emit("ERROR commit " + oneLine(t));
                    exitCode = 2;
                }
            }
            try {
                c.shutdown();
            } catch (Throwable t) {
                emit("ERROR shutdown " + oneLine(t));
                exitCode = 2;
            }
        }
        if (quiet) {
            emit("STATS first_ms=" + firstMs.get() + " last_ms=" + lastMs.get() + " bytes="
                    + consumedBytes.get());
        }
        emit("EXIT consumed=" + consumed.get());
        exited = true;
        finished.countDown();
    }

    // ------------------------------------------------------------------ workers
    private Thread worker(final int index, final String label, final KafkaStream<byte[], byte[]> stream) {
        Thread t = new Thread("legacy-consumer-stream-" + index) {
            @Override
            public void run() {
                ConsumerIterator<byte[], byte[]> it = stream.iterator();
                try {
                    while (!stopping.get()) {
                        try {
                            if (!it.hasNext()) {
                                break; // connector sent the shutdown command
                            }
                        } catch (ConsumerTimeoutException te) {
                            continue;
                        }
                        if (stopping.get()) {
                            break; // not taking it: next() is what marks the offset consumed
                        }
                        long n = 0;
                        if (maxMessages >= 0) {
                            n = reserved.incrementAndGet();
                            if (n > maxMessages) {
                                requestStop("max-messages");
                                break;
                            }
                        }
                        MessageAndMetadata<byte[], byte[]> m = it.next();
                        long now = System.currentTimeMillis();
                        String where = label + " " + m.topic() + " " + m.partition() + " " + m.offset()
                                + " " + now + " ";
                        if (quiet) {
                            firstMs.compareAndSet(-1, now);
                            lastMs.set(now);
                            consumedBytes.addAndGet((m.key() == null ? 0 : m.key().length)
                                    + (m.message() == null ? 0 : m.message().length));
                        } else if (details) {
                            emit("MSGK " + where + timestampOf(m) + " " + hex(m.key()) + " "
                                    + escape(m.message()));
                        } else {
                            emit("MSG " + where + escape(m.message()));
                        }
                        consumed.incrementAndGet();
                        lastActivity.set(now);
                        if (maxMessages >= 0 && n >= maxMessages) {
                            requestStop("max-messages");
                        }
                    }
                } catch (Throwable e) {
                    emit("ERROR " + label + " " + oneLine(e));
                    exitCode = 2;
                    requestStop("error");
                }
            }
        };
        t.setDaemon(true);
        return t;
    }

    // ------------------------------------------------------------------ main
    int run() throws Exception {
        Runtime.getRuntime().addShutdownHook(new Thread("legacy-consumer-shutdown") {
            @Override
            public void run() {
                LegacyConsumer.this.shutdown();
            }
        });

        List<KafkaStream<byte[], byte[]>> all = new ArrayList<KafkaStream<byte[], byte[]>>();
        List<String> streamTopic = new ArrayList<String>();
        try {
            connector = Consumer.createJavaConsumerConnector(new ConsumerConfig(consumerProps()));
            String cid = consumerIdString();
            emit("CONSUMER " + (cid == null ? "?" : cid));
            if (whitelist != null) {
                List<KafkaStream<byte[], byte[]>> ss =
                        connector.createMessageStreamsByFilter(new Whitelist(whitelist), streams);
                for (KafkaStream<byte[], byte[]> s : ss) {
                    all.add(s);
                    streamTopic.add("*");
                }
            } else {
                Map<String, Integer> counts = new LinkedHashMap<String, Integer>();
                for (String t : topics) {
                    counts.put(t, streams);
                }
                Map<String, List<KafkaStream<byte[], byte[]>>> byTopic = connector.createMessageStreams(counts);
                for (String t : topics) {
                    for (KafkaStream<byte[], byte[]> s : byTopic.get(t)) {
                        all.add(s);
                        streamTopic.add(t);
                    }
                }
            }
        } catch (Throwable t) {
            emit("ERROR connector " + oneLine(t));
            exitCode = 2;
            requestStop("error");
            shutdown();
            return exitCode;
        }
        if (stopping.get()) {
            // SIGTERM arrived during the first rebalance; the hook does the rest
            finished.await();
            return exitCode;
        }
        for (int i = 0; i < all.size(); i++) {
            String tid = threadIdOf(all.get(i));
            emit("STREAM " + i + " " + (tid == null ? "?" : tid) + " " + streamTopic.get(i));
            workers.add(worker(i, tid == null ? Integer.toString(i) : tid, all.get(i)));
        }
        lastActivity.set(System.currentTimeMillis());
        emit("READY");
        for (Thread w : workers) {
            w.start();
        }

        while (!stopRequested.await(50, TimeUnit.MILLISECONDS)) {
            if (idleExitMs >= 0 && System.currentTimeMillis() - lastActivity.get() >= idleExitMs) {
                requestStop("idle");
                break;
            }
            boolean alive = false;
            for (Thread w : workers) {
                alive |= w.isAlive();
            }
            if (!alive) {
                requestStop("streams-ended");
                break;
            }
        }
        shutdown();
        return exitCode;
    }

    /** The arguments split at each "--and": one connector each. */
    static List<String[]> connectorArgs(String[] args) {
        List<String[]> out = new ArrayList<String[]>();
        List<String> cur = new ArrayList<String>();
        for (String a : args) {
            if (a.equals("--and")) {
                out.add(cur.toArray(new String[0]));
                cur = new ArrayList<String>();
            } else {
                cur.add(a);
            }
        }
        out.add(cur.toArray(new String[0]));
        return out;
    }

    public static void main(String[] args) throws Exception {
        try {
            out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        } catch (UnsupportedEncodingException e) {
            throw new AssertionError(e);
        }
        List<String[]> specs = connectorArgs(args);
        final List<LegacyConsumer> hs = new ArrayList<LegacyConsumer>();
        for (String[] spec : specs) {
            LegacyConsumer h = new LegacyConsumer();
            h.parse(spec);
            hs.add(h);
        }
        hs.get(0).configureLogging();
        if (hs.size() == 1) {
            int code = hs.get(0).run();
            out.flush();
            System.exit(code);
        }
        // several connectors (groups) in one JVM, each run as it would alone; one JVM start
        // instead of one per group. Their MSG lines tell them apart by thread id (<group>_...).
        final int[] codes = new int[hs.size()];
        List<Thread> runners = new ArrayList<Thread>();
        for (int i = 0; i < hs.size(); i++) {
            final int k = i;
            Thread t = new Thread("legacy-consumer-connector-" + k) {
                @Override
                public void run() {
                    try {
                        codes[k] = hs.get(k).run();
                    } catch (Throwable e) {
                        emit("ERROR connector " + oneLine(e));
                        codes[k] = 2;
                    }
                }
            };
            runners.add(t);
            t.start();
        }
        int code = 0;
        for (int i = 0; i < runners.size(); i++) {
            runners.get(i).join();
            code = Math.max(code, codes[i]);
        }
        out.flush();
        System.exit(code);
    }
}
