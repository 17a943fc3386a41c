// Kafka 3.9's own down-conversion as a line-oriented reference for tests ("kafka" classpath):
// each stdin line "<magic> <first offset> <hex of record batches>" is answered with one
// stdout line, "OK <hex>" of MemoryRecords.downConvert(magic, firstOffset) - what a 3.9
// broker's LazyDownConversionRecords sends a Fetch v0-v3 client - or "ERROR <class: message>".
// An empty line or EOF ends the process.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.utils.Time;

public final class KafkaDownConvert {
    private KafkaDownConvert() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out =
                new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            String[] f = line.trim().split(" ");
            try {
                byte[] data = f.length > 2 ? unhex(f[2]) : new byte[0];
                MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(data));
                ByteBuffer converted = records
                        .downConvert(Byte.parseByte(f[0]), Long.parseLong(f[1]), Time.SYSTEM)
                        .records().buffer();
                StringBuilder sb = new StringBuilder("OK ");
                while (converted.hasRemaining()) {
                    sb.append(String.format("%02x", converted.get() & 0xff));
                }
                out.println(sb);
            } catch (Throwable t) {
                out.println("ERROR " + t.getClass().getName() + ": "
                        + String.valueOf(t.getMessage()).replace('\n', ' '));
            }
        }
    }

    static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}
