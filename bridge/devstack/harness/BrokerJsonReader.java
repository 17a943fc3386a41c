/*
 * Test harness for kafka-zk-bridge: parses /brokers/ids/<id> JSON with an OLD Kafka release's
 * own parser, kafka.cluster.Broker.createBroker(int, String) (the one ZkUtils calls for the
 * Scala consumer), and prints the PLAINTEXT endpoint the consumer would connect to, as that
 * release finds it:
 *   0.8.x            Broker.host() / port()
 *   0.9.x            Broker.getBrokerEndPoint(SecurityProtocol.PLAINTEXT)
 *   0.10.x / 0.11.x  Broker.getBrokerEndPoint(ListenerName.forSecurityProtocol(PLAINTEXT))
 * Everything is looked up reflectively, so one source compiles against every release.
 *
 * stdin: one "<broker id> <json>" per line. stdout, one line per input line:
 *   OK <id> <host>:<port>
 *   FAIL <id> <exception text, causes included, on one line>
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;

public final class BrokerJsonReader {

    static String oneLine(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (sb.length() > 0) {
                sb.append(" caused by ");
            }
            sb.append(c);
        }
        return sb.toString().replace('\n', ' ').replace('\r', ' ');
    }

    /** The endpoint object the release's consumer would use, or the broker itself (0.8). */
    static Object plaintextEndpoint(Object broker) throws Exception {
        for (Method m : broker.getClass().getMethods()) {
            if (!m.getName().equals("getBrokerEndPoint") || m.getParameterTypes().length != 1) {
                continue;
            }
            Class<?> arg = m.getParameterTypes()[0];
            Class<?> protocols = Class.forName("org.apache.kafka.common.protocol.SecurityProtocol");
            Object plaintext = protocols.getField("PLAINTEXT").get(null);
            if (arg.equals(protocols)) {
                return m.invoke(broker, plaintext); // 0.9
            }
            Class<?> listener = Class.forName("org.apache.kafka.common.network.ListenerName");
            Object name = listener.getMethod("forSecurityProtocol", protocols).invoke(null, plaintext);
            return m.invoke(broker, name); // 0.10, 0.11
        }
        return broker; // 0.8: host and port on the broker
    }

    public static void main(String[] args) throws Exception {
        Method create = Class.forName("kafka.cluster.Broker").getMethod("createBroker", int.class, String.class);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            int sp = line.indexOf(' ');
            int id = Integer.parseInt(line.substring(0, sp));
            try {
                Object broker = create.invoke(null, id, line.substring(sp + 1));
                Object ep = plaintextEndpoint(broker);
                Object host = ep.getClass().getMethod("host").invoke(ep);
                Object port = ep.getClass().getMethod("port").invoke(ep);
                System.out.println("OK " + id + " " + host + ":" + port);
            } catch (InvocationTargetException e) {
                System.out.println("FAIL " + id + " " + oneLine(e.getCause()));
            } catch (Exception e) {
                System.out.println("FAIL " + id + " " + oneLine(e));
            }
        }
        System.out.flush();
    }
}
