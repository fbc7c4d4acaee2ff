// The Java client (kafka-clients 3.9.1) over a secured listener, run by
// test_java_security.py as a JDK 17 single-file program:
//     java -cp <jars> JavaSecureClient.java CLIENT_PROPERTIES TOPIC GROUP
// CLIENT_PROPERTIES holds bootstrap.servers and the security settings exactly as a
// user's client config file would (security.protocol, sasl.*, ssl.*). Admin
// createTopics (RF 3), a producer writing 30 records, a consumer in GROUP reading
// them back through subscribe + commitSync, Admin describeCluster. Prints
// "OK <n> records" on success; any mismatch throws (exit status 1).

import java.io.FileReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaSecureClient {
    static final int N = 30;

    public static void main(String[] args) throws Exception {
        Properties common = new Properties();
        try (FileReader r = new FileReader(args[0])) { common.load(r); }
        String topic = args[1], group = args[2];

        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 3))).all().get();
            int brokers = admin.describeCluster().nodes().get().size();
            if (brokers != 3) throw new AssertionError("describeCluster saw " + brokers);
        }
        Properties p = new Properties();
        p.putAll(common);
        p.put("acks", "all");
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < N; i++)
                producer.send(new ProducerRecord<>(topic, ("java-" + i).getBytes(StandardCharsets.UTF_8))).get();
        }
        Properties c = new Properties();
        c.putAll(common);
        c.put("group.id", group);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen.size() < N && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(500)))
                    seen.add(new String(rec.value(), StandardCharsets.UTF_8));
            consumer.commitSync();
        }
        if (seen.size() != N) throw new AssertionError("consumed " + seen.size() + " of " + N);
        System.out.println("OK " + seen.size() + " records");
    }
}
