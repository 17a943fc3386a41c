// Kafka's own down-conversion, timed in-process on the same fetches as the gateway's
// converter (bench/gateway_convert.py --kafka): compiled against the "kafka" classpath
// (kafka-clients 3.9), it runs MemoryRecords.downConvert - RecordsUtil.downConvert, the
// work a 3.9 broker's LazyDownConversionRecords does for a Fetch v0-v3 - on each fetch.
//
//   java DownConvertBench <fetches file> <magic> <reps> <payload bytes>
// The file holds the fetches one after another: int64 fetch offset, int32 length, bytes.
// Prints one line: "<best seconds> <MB/s of payload> <converted bytes>". Single thread; the
// seconds are this thread's CPU time (the machine is shared: wall time is noise).

import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.EOFException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.record.ConvertedRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.utils.Time;

public final class DownConvertBench {
    private DownConvertBench() {}

    public static void main(String[] args) throws Exception {
        List<Long> offsets = new ArrayList<>();
        List<byte[]> fetches = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new FileInputStream(args[0]))) {
            while (true) {
                long offset;
                try {
                    offset = in.readLong();
                } catch (EOFException e) {
                    break;
                }
                byte[] data = new byte[in.readInt()];
                in.readFully(data);
                offsets.add(offset);
                fetches.add(data);
            }
        }
        byte magic = Byte.parseByte(args[1]);
        int reps = Integer.parseInt(args[2]);
        long payload = Long.parseLong(args[3]);
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        double best = Double.MAX_VALUE;
        long converted = 0;
        for (int r = 0; r < reps; r++) {
            long start = cpu.getCurrentThreadCpuTime();
            converted = 0;
            for (int i = 0; i < fetches.size(); i++) {
                MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(fetches.get(i)));
                ConvertedRecords<MemoryRecords> out =
                        records.downConvert(magic, offsets.get(i), Time.SYSTEM);
                converted += out.records().sizeInBytes();
            }
            best = Math.min(best, (cpu.getCurrentThreadCpuTime() - start) / 1e9);
        }
        System.out.println(best + " " + (payload / best / 1e6) + " " + converted);
    }
}
