// The old Scala consumer's partition assignors (kafka_2.11-0.10.2.2) as a line-oriented
// reference for tests, over an embedded ZooKeeper (the one of the legacy classpath).
//
// Each stdin line is a case, tab-separated (the legacy classpath has no JSON library):
//   range|roundrobin  TAB  topic=count,topic=count  TAB  consumer-id=base64(registration JSON) ...
// The registration JSON is the data of /consumers/<g>/ids/<consumer id>. The case's registrations and topics are written to ZooKeeper (under a fresh group, with
// /brokers/topics holding only the case's topics); each consumer then runs the assignor in
// its own AssignmentContext, as a rebalancing old consumer does, and the partitions it
// assigns to itself are collected. The answer is one stdout line
//   OK  TAB  topic/partition=thread-id  TAB ...
// or ERROR TAB message (also when two consumers would claim one partition).
//
// A line "register TAB consumer-id TAB static|white_list|black_list TAB base64(topic)=streams,..."
// instead starts a real ZookeeperConsumerConnector (that consumer.id, no brokers) with those
// streams (a wildcard takes one entry: its regex) and answers OK TAB the JSON it registered
// under /consumers/<g>/ids, its timestamp replaced by 1500000000000, then TAB the pattern
// and TAB base64(topic or regex)=streams entries as an old consumer's TopicCount reads them
// (for a wildcard, the regex of its TopicFilter).
// An empty line or EOF ends the process.

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import kafka.common.TopicAndPartition;
import kafka.consumer.AssignmentContext;
import kafka.consumer.Blacklist;
import kafka.consumer.Consumer;
import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerThreadId;
import kafka.consumer.PartitionAssignor;
import kafka.consumer.RangeAssignor;
import kafka.consumer.RoundRobinAssignor;
import kafka.consumer.TopicCount;
import kafka.consumer.TopicCount$;
import kafka.consumer.TopicFilter;
import kafka.consumer.Whitelist;
import kafka.consumer.WildcardTopicCount;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.utils.ZkUtils;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;
import scala.collection.JavaConverters;

public final class LegacyAssignors {
    private LegacyAssignors() {}

    public static void main(String[] args) throws Exception {
        File dir = Files.createTempDirectory("legacy-assignors").toFile();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(dir)));
        ZooKeeperServer server = new ZooKeeperServer(dir, dir, 2000);
        ServerCnxnFactory factory =
                ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 10);
        factory.startup(server);
        ZkUtils zk = ZkUtils.apply("127.0.0.1:" + factory.getLocalPort(), 30000, 30000, false);
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        String line;
        int n = 0;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            String answer;
            try {
                String[] fields = line.split("\t", -1);
                String zkConnect = "127.0.0.1:" + factory.getLocalPort();
                StringBuilder sb = new StringBuilder("OK");
                if ("register".equals(fields[0])) {
                    sb.append('\t').append(register(zk, zkConnect, "g" + n++, fields));
                } else {
                    assign(zk, "g" + n++, fields)
                            .forEach((k, v) -> sb.append('\t').append(k).append('=').append(v));
                }
                answer = sb.toString();
            } catch (Exception e) {
                answer = "ERROR\t" + e.toString().replace('\n', ' ');
            }
            out.println(answer);
        }
        zk.close();
        factory.shutdown();
        server.shutdown();
    }

    static String register(ZkUtils zk, String zkConnect, String group, String[] c)
            throws ReflectiveOperationException {
        Properties props = new Properties();
        props.put("zookeeper.connect", zkConnect);
        props.put("group.id", group);
        props.put("consumer.id", c[1]);
        props.put("auto.commit.enable", "false");
        ConsumerConnector connector = Consumer.createJavaConsumerConnector(new ConsumerConfig(props));
        try {
            Map<String, Integer> streams = new LinkedHashMap<>();
            for (String s : c[3].split(",")) {
                int eq = s.lastIndexOf('=');
                streams.put(
                        new String(Base64.getDecoder().decode(s.substring(0, eq)), StandardCharsets.UTF_8),
                        Integer.parseInt(s.substring(eq + 1)));
            }
            if ("static".equals(c[2])) {
                connector.createMessageStreams(streams);
            } else {
                Map.Entry<String, Integer> w = streams.entrySet().iterator().next();
                TopicFilter filter = "white_list".equals(c[2]) ? new Whitelist(w.getKey()) : new Blacklist(w.getKey());
                connector.createMessageStreamsByFilter(filter, w.getValue());
            }
            String id = group + "_" + c[1];
            String json = zk.readData("/consumers/" + group + "/ids/" + id)._1();
            StringBuilder out = new StringBuilder(
                    json.replaceFirst("\"timestamp\":\"[0-9]+\"", "\"timestamp\":\"1500000000000\""));
            // and how an old consumer reads it back (TopicCount, as a rebalance does)
            TopicCount read = TopicCount$.MODULE$.constructTopicCount(group, id, zk, true);
            out.append('\t').append(read.pattern());
            for (Map.Entry<String, Object> e :
                    JavaConverters.mapAsJavaMapConverter(read.getTopicCountMap()).asJava().entrySet()) {
                // a wildcard's map key is its regex JSON-escaped again; the filter holds the regex
                String key = read instanceof WildcardTopicCount ? filterRegex(read) : e.getKey();
                out.append('\t').append(Base64.getEncoder().encodeToString(key.getBytes(StandardCharsets.UTF_8)))
                        .append('=').append(e.getValue());
            }
            return out.toString();
        } finally {
            connector.shutdown();
        }
    }

    /** The regex of a WildcardTopicCount's (private) TopicFilter. */
    static String filterRegex(TopicCount count) throws ReflectiveOperationException {
        for (Field f : WildcardTopicCount.class.getDeclaredFields()) {
            if (TopicFilter.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                return ((TopicFilter) f.get(count)).regex();
            }
        }
        throw new NoSuchFieldException("WildcardTopicCount has no TopicFilter field");
    }

    static void delete(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                delete(c);
            }
        }
        f.delete();
    }

    static Map<String, String> assign(ZkUtils zk, String group, String[] c) {
        zk.deletePathRecursive("/brokers/topics");
        for (String t : c[1].isEmpty() ? new String[0] : c[1].split(",")) {
            String[] kv = t.split("=");
            StringBuilder parts = new StringBuilder();
            for (int p = 0; p < Integer.parseInt(kv[1]); p++) {
                parts.append(p == 0 ? "" : ",").append('"').append(p).append("\":[0]");
            }
            String path = "/brokers/topics/" + kv[0];
            zk.updatePersistentPath(
                    path, "{\"version\":1,\"partitions\":{" + parts + "}}", zk.defaultAcls(path));
        }
        List<String> consumers = new ArrayList<>();
        for (int i = 2; i < c.length; i++) {
            String consumer = c[i].substring(0, c[i].indexOf('='));
            String data = new String(Base64.getDecoder().decode(c[i].substring(consumer.length() + 1)),
                    StandardCharsets.UTF_8);
            String path = "/consumers/" + group + "/ids/" + consumer;
            zk.updatePersistentPath(path, data, zk.defaultAcls(path));
            consumers.add(consumer);
        }
        PartitionAssignor assignor =
                "range".equals(c[0]) ? new RangeAssignor() : new RoundRobinAssignor();
        Map<String, String> owners = new TreeMap<>();
        for (String consumer : consumers) {
            AssignmentContext ctx = new AssignmentContext(group, consumer, true, zk);
            scala.collection.mutable.Map<TopicAndPartition, ConsumerThreadId> mine =
                    assignor.assign(ctx).get(consumer);
            if (mine == null) {
                continue;
            }
            for (Map.Entry<TopicAndPartition, ConsumerThreadId> e :
                    JavaConverters.mapAsJavaMapConverter(mine).asJava().entrySet()) {
                String key = e.getKey().topic() + "/" + e.getKey().partition();
                String previous = owners.put(key, e.getValue().toString());
                if (previous != null) {
                    throw new IllegalStateException(key + " claimed by " + previous + " and " + e.getValue());
                }
            }
        }
        return owners;
    }
}
