import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.storm.Config;
import org.apache.storm.kafka.KafkaSpout;
import org.apache.storm.kafka.MessageMetadataSchemeAsMultiScheme;
import org.apache.storm.kafka.Partition;
import org.apache.storm.kafka.PartitionCoordinator;
import org.apache.storm.kafka.PartitionManager;
import org.apache.storm.kafka.SpoutConfig;
import org.apache.storm.kafka.StringMessageAndMetadataScheme;
import org.apache.storm.kafka.ZkHosts;
import org.apache.storm.metric.api.IMetric;
import org.apache.storm.spout.ISpoutOutputCollector;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.tuple.Fields;
import org.apache.storm.utils.Utils;

/**
 * The real storm-kafka 1.2.x KafkaSpout, hosted as a one-task Storm executor hosts it:
 * open() with a real TopologyContext, nextTuple() in a loop, every tuple acked at once,
 * deactivate() (the spout's commit of its partition_n nodes) and close() to stop. One JVM
 * serves a whole test: commands on stdin start and stop spout instances (a restarted
 * topology is a new instance with a new storm id).
 *
 * stdin: "START storm-id" (open a spout), "TAKE n" (emit and ack n more tuples), "STOP"
 * (deactivate and close), "QUIT". stdout: "READY" once, "STARTED", "MSG spout topic
 * partition offset wall_ms value" per tuple, after each TAKE "PARTITION p host:port" per
 * partition the spout manages then "TOOK n", "STOPPED", "EXIT".
 *
 * Args: --zk host:port (the spout's offset store; storm-kafka takes no chroot there)
 *       --brokers-zk host:port[/chroot] (where DynamicBrokersReader finds /brokers)
 *       --zk-root PATH --spout-id ID --topic T [--name TOPOLOGY_NAME]
 */
public class StormSpout {
    static Map<String, String> a = new HashMap<>();
    static Map conf;
    static KafkaSpout spout;
    static final List<Object[]> emitted = new ArrayList<>();

    public static void main(String[] argv) throws Exception {
        for (int i = 0; i + 1 < argv.length; i += 2) {
            a.put(argv[i], argv[i + 1]);
        }
        conf = Utils.readStormConfig();
        conf.put(Config.TOPOLOGY_NAME, a.getOrDefault("--name", "kzb-storm-test"));
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            if (cmd[0].equals("START")) {
                start(cmd[1]);
                System.out.println("STARTED");
            } else if (cmd[0].equals("TAKE")) {
                take(Long.parseLong(cmd[1]));
            } else if (cmd[0].equals("STOP")) {
                spout.deactivate();
                spout.close();
                spout = null;
                System.out.println("STOPPED");
            } else if (cmd[0].equals("QUIT")) {
                break;
            }
            System.out.flush();
        }
        if (spout != null) {
            spout.deactivate();
            spout.close();
        }
        System.out.println("EXIT");
        System.out.flush();
        System.exit(0);
    }

    static void start(String stormId) {
        String[] zk = a.get("--zk").split(":");
        SpoutConfig sc = new SpoutConfig(
            new ZkHosts(a.get("--brokers-zk")), a.get("--topic"), a.get("--zk-root"), a.get("--spout-id"));
        sc.zkServers = Collections.singletonList(zk[0]);
        sc.zkPort = Integer.parseInt(zk[1]);
        sc.scheme = new MessageMetadataSchemeAsMultiScheme(new StringMessageAndMetadataScheme());
        sc.startOffsetTime = kafka.api.OffsetRequest.EarliestTime();
        sc.stateUpdateIntervalMs = 500;
        sc.fetchMaxWait = 200;

        Map<Integer, String> taskToComponent = new HashMap<>();
        taskToComponent.put(1, "spout");
        Map<String, List<Integer>> componentTasks = new HashMap<>();
        componentTasks.put("spout", Arrays.asList(1));
        TopologyContext context = new TopologyContext(
            null, conf, taskToComponent, componentTasks, new HashMap<String, Map<String, Fields>>(),
            stormId, null, null, 1, 6700, Arrays.asList(1), new HashMap<String, Object>(),
            new HashMap<String, Object>(), new HashMap<String, Object>(),
            new HashMap<Integer, Map<Integer, Map<String, IMetric>>>(), new clojure.lang.Atom(false));
        SpoutOutputCollector collector = new SpoutOutputCollector(new ISpoutOutputCollector() {
            public List<Integer> emit(String stream, List<Object> tuple, Object messageId) {
                emitted.add(new Object[] {tuple, messageId});
                return Arrays.asList(1);
            }

            public void emitDirect(int task, String stream, List<Object> tuple, Object messageId) {
                emit(stream, tuple, messageId);
            }

            public long getPendingCount() {
                return 0;
            }

            public void reportError(Throwable error) {
                System.err.println("spout error: " + error);
            }
        });
        spout = new KafkaSpout(sc);
        spout.open(conf, context, collector);
        spout.activate();
    }

    static void take(long n) throws Exception {
        long count = 0;
        while (count < n) {
            spout.nextTuple();
            if (emitted.isEmpty()) {
                Thread.sleep(10);
                continue;
            }
            for (Object[] e : emitted) {
                List<Object> t = (List<Object>) e[0];
                System.out.println("MSG spout " + a.get("--topic") + " " + t.get(1) + " " + t.get(2)
                    + " " + System.currentTimeMillis() + " " + t.get(0));
                spout.ack(e[1]);
                count++;
            }
            emitted.clear();
        }
        // the managed partitions and the broker each is fetched from (package-private state)
        Field f = KafkaSpout.class.getDeclaredField("_coordinator");
        f.setAccessible(true);
        PartitionCoordinator coordinator = (PartitionCoordinator) f.get(spout);
        for (PartitionManager pm : coordinator.getMyManagedPartitions()) {
            Partition p = pm.getPartition();
            System.out.println("PARTITION " + p.partition + " " + p.host.host + ":" + p.host.port);
        }
        System.out.println("TOOK " + count);
    }
}
