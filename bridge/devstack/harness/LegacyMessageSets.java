// The old clients' own message-set reader as a line-oriented reference for tests: compiled
// against the 0.10.2.2 classpath ("legacy") or the 0.8.2.2 one ("legacy082"), it reads each
// stdin line (the hex of a message set, as a Fetch v0-v3 response carries it; "." for an
// empty one) with that
// version's kafka.message.ByteBufferMessageSet, the way the old Scala consumer does: the
// shallow entries (each wrapper's CRC checked with isValid), then the deep iterator (each
// message decompressed, its CRC checked with ensureValid, as ConsumerIterator does).
//
// Answer, one stdout line, tab-separated:
//   OK  validBytes  shallowEntries  offset,keyHex,valueHex,magic,timestamp,timestampType ...
// key/value "-" for null; timestamp "-1" and type "NONE" on 0.8 (no timestamps there).
// Or ERROR  class: message  when the reader throws. An empty line or EOF ends the process.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import kafka.message.ByteBufferMessageSet;
import kafka.message.Message;
import kafka.message.MessageAndOffset;

public final class LegacyMessageSets {
    private LegacyMessageSets() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out =
                new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            String answer;
            try {
                answer = read(line.equals(".") ? new byte[0] : unhex(line.trim()));
            } catch (Throwable t) {
                answer = "ERROR\t" + t.getClass().getName() + ": "
                        + String.valueOf(t.getMessage()).replace('\n', ' ').replace('\t', ' ');
            }
            out.println(answer);
        }
    }

    static String read(byte[] bytes) {
        ByteBufferMessageSet set = new ByteBufferMessageSet(ByteBuffer.wrap(bytes));
        StringBuilder sb = new StringBuilder("OK\t").append(set.validBytes());
        scala.collection.Iterator<MessageAndOffset> shallow = set.shallowIterator();
        int entries = 0;
        while (shallow.hasNext()) {
            MessageAndOffset mo = shallow.next();
            if (!mo.message().isValid()) {
                throw new IllegalStateException("invalid CRC in the entry at " + mo.offset());
            }
            entries++;
        }
        sb.append('\t').append(entries);
        scala.collection.Iterator<MessageAndOffset> deep = set.iterator();
        while (deep.hasNext()) {
            MessageAndOffset mo = deep.next();
            Message m = mo.message();
            m.ensureValid();
            sb.append('\t').append(mo.offset()).append(',').append(hex(m.key())).append(',')
                    .append(hex(m.payload())).append(',').append(m.magic()).append(',')
                    .append(timestamp(m));
        }
        return sb.toString();
    }

    /** "timestamp,type" of a 0.10+ message; "-1,NONE" on 0.8, which has neither. */
    static String timestamp(Message m) {
        try {
            Object ts = m.getClass().getMethod("timestamp").invoke(m);
            Object type = m.getClass().getMethod("timestampType").invoke(m);
            return ts + "," + type;
        } catch (NoSuchMethodException e) {
            return "-1,NONE";
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    static String hex(ByteBuffer b) {
        if (b == null) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining()) {
            sb.append(String.format("%02x", d.get() & 0xff));
        }
        return sb.toString();
    }

    static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}
