// The Java client's producer loop (kafka-clients 3.9.1, JDK 17 single-file source launch)
// for the client campaign (tests/fault/client_campaign.py):
//
//     java -cp CLASSPATH JavaProduceLoop.java BOOTSTRAP TOPIC PARTITIONS BASE RATE
//
// The client's default settings (idempotent, acks=all, delivery.timeout.ms 120 s) but
// for the serializers. Sends BASE, BASE+1, ... at RATE values/s in all, value i to
// partition i % PARTITIONS, without waiting for answers. The line protocol on stdout is
// tests/fault/produce_loops.py's (times from System.nanoTime, CLOCK_MONOTONIC on Linux):
//
//     READY
//     ACK <partition> <value> <offset> <sent ns> <acked ns>
//     ERR <partition> <value> <sent ns> <exception class>
//     DONE <sent>               stdin said "stop" or closed: flushed and closed
//     LEADER <partition> <node> <ns>   the leader the client's metadata names changed
//                               (-1: none), polled every 50 ms: when it learned of a move
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaProduceLoop {
    static final PrintStream OUT = System.out;

    static synchronized void line(String s) {
        OUT.println(s);
        OUT.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long base = Long.parseLong(args[3]);
        double rate = Double.parseDouble(args[4]);

        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in))) {
                String l;
                while ((l = r.readLine()) != null && !l.trim().equals("stop")) { }
            } catch (Exception e) { }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        line("READY");
        Thread leaders = new Thread(() -> {
            int[] known = new int[partitions];
            java.util.Arrays.fill(known, -2);
            while (!stop.get()) {
                try {
                    for (org.apache.kafka.common.PartitionInfo pi : producer.partitionsFor(topic)) {
                        int node = pi.leader() == null ? -1 : pi.leader().id();
                        if (pi.partition() < partitions && known[pi.partition()] != node) {
                            known[pi.partition()] = node;
                            line("LEADER " + pi.partition() + " " + node + " " + System.nanoTime());
                        }
                    }
                    Thread.sleep(50);
                } catch (Exception e) {
                    return;
                }
            }
        });
        leaders.setDaemon(true);
        leaders.start();

        long t0 = System.nanoTime();
        long i = 0;
        while (!stop.get()) {
            long due = t0 + (long) (i * 1e9 / rate);
            long now = System.nanoTime();
            if (now < due) {
                Thread.sleep(Math.max(1, Math.min(50, (due - now) / 1_000_000)));
                continue;
            }
            final int p = (int) (i % partitions);
            final long value = base + i;
            final long sent = System.nanoTime();
            producer.send(new ProducerRecord<>(topic, p, null, Long.toString(value).getBytes()),
                (md, e) -> {
                    if (e == null) {
                        line("ACK " + p + " " + value + " " + md.offset() + " " + sent + " " + System.nanoTime());
                    } else {
                        line("ERR " + p + " " + value + " " + sent + " " + e.getClass().getSimpleName());
                    }
                });
            i++;
        }
        producer.flush();
        producer.close(Duration.ofSeconds(10));
        line("DONE " + i);
    }
}
