// Drives the Java Kafka client (kafka-clients 3.9.1) against tests/tools/capture_server.py
// so its request frames can be captured as golden fixtures.
//   java -cp <jars> tests/tools/GoldenClient.java 127.0.0.1:PORT
// Steps (each with its own client.id "golden-java-<step>", which labels the frames):
// produce with keys + headers in every compression, consume in a group and commit,
// list offsets (earliest / latest / by time, via the consumer and the admin client),
// create and delete a topic.

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class GoldenClient {
    static final String TOPIC = "golden-java";
    static final int MESSAGES = 3;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        for (String codec : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
            produce(bootstrap, codec);
        }
        consume(bootstrap);
        admin(bootstrap);
        System.out.println("golden-java: done");
    }

    static void produce(String bootstrap, String codec) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "golden-java-produce-" + codec);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < MESSAGES; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(TOPIC, 0,
                    ("key-" + i).getBytes(), ("value-" + i + "-" + "x".repeat(40)).getBytes());
                r.headers().add("trace", ("t" + i).getBytes()).add("empty", new byte[0]);
                producer.send(r);
            }
            producer.flush();
        }
    }

    static void consume(String bootstrap) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "golden-java-consume");
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "golden-java-group");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(Collections.singletonList(TOPIC));
            int got = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (got < MESSAGES && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> rs = consumer.poll(Duration.ofMillis(500));
                got += rs.count();
            }
            if (got < MESSAGES) throw new IllegalStateException("consumer got " + got);
            long idle = System.currentTimeMillis() + 3_500;  // past one heartbeat interval
            while (System.currentTimeMillis() < idle) consumer.poll(Duration.ofMillis(200));
            consumer.commitSync();
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            consumer.beginningOffsets(List.of(tp));
            consumer.endOffsets(List.of(tp));
            consumer.offsetsForTimes(Map.of(tp, System.currentTimeMillis() - 60_000));
            consumer.committed(java.util.Set.of(tp));
        }
    }

    static void admin(String bootstrap) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "golden-java-admin");
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic("golden-java-admin", 2, (short) 1))).all().get();
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get();
            admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get();
            admin.deleteTopics(List.of("golden-java-admin")).all().get();
        }
    }
}
