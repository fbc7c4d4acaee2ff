// Back-to-back transactions on the Java client (kafka-clients 3.9.1) for bench/txn_latency.py:
//     java -cp CLASSPATH bench/JavaTxnBench.java BOOTSTRAP TOPIC PARTITIONS RECORDS SIZE
// then one command per line on stdin:
//     run TRANSACTIONAL_ID WARMUP_TRANSACTIONS SECONDS
// opens a producer with that transactional id, initTransactions(), WARMUP_TRANSACTIONS
// transactions (not timed), then transactions for SECONDS of wall time, each
// beginTransaction(), RECORDS records of SIZE zero bytes (no key, partition i % PARTITIONS),
// commitTransaction(); closes the producer and prints one line
//     RESULT <transactions> <elapsed ns> <commit ns>,<commit ns>,...
// (the commit times: commitTransaction() alone). Ends at EOF or "quit". Any failure is
// printed to stderr and ends the program with status 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaTxnBench {
    static String bootstrap, topic;
    static int partitions, records;
    static byte[] value;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        topic = args[1];
        partitions = Integer.parseInt(args[2]);
        records = Integer.parseInt(args[3]);
        value = new byte[Integer.parseInt(args[4])];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        System.out.flush();
        try {
            String line;
            while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
                String[] cmd = line.trim().split("\\s+");
                if (cmd.length != 4 || !cmd[0].equals("run")) {
                    throw new IllegalArgumentException("bad command: " + line);
                }
                System.out.println(run(cmd[1], Integer.parseInt(cmd[2]), Double.parseDouble(cmd[3])));
                System.out.flush();
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }

    static String run(String transactionalId, int warmup, double seconds) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        List<Long> commits = new ArrayList<>();
        long start, elapsed;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int i = 0; i < warmup; i++) {
                transaction(producer);
            }
            start = System.nanoTime();
            long until = start + (long) (seconds * 1e9);
            while (System.nanoTime() < until) {
                commits.add(transaction(producer));
            }
            elapsed = System.nanoTime() - start;
        }
        StringBuilder out = new StringBuilder("RESULT " + commits.size() + " " + elapsed + " ");
        for (int i = 0; i < commits.size(); i++) {
            out.append(i == 0 ? "" : ",").append(commits.get(i));
        }
        return out.toString();
    }

    /** One transaction; -> the nanoseconds commitTransaction() took. */
    static long transaction(KafkaProducer<byte[], byte[]> producer) {
        producer.beginTransaction();
        for (int i = 0; i < records; i++) {
            producer.send(new ProducerRecord<>(topic, i % partitions, null, value));
        }
        long t0 = System.nanoTime();
        producer.commitTransaction();
        return System.nanoTime() - t0;
    }
}
