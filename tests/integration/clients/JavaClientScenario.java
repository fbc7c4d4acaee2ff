// The Java client (kafka-clients 3.9.1) scenario, run by test_java_client.py as a
// JDK 17 single-file program:  java -cp <jars> JavaClientScenario.java BOOTSTRAP TOPIC
//
// Admin createTopics; an idempotent producer (the Java default) per codec
// writing records with keys, headers and explicit timestamps to explicit
// partitions; assign + seekToBeginning read-back compared record by record with
// the offsets the producer was told; offsetsForTimes probes; Admin deleteTopics.
// Prints "OK <n> records" on success; any mismatch throws (exit status 1).

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaClientScenario {
    static final int PARTITIONS = 3;
    static final int PER_CODEC = 12;
    static final long BASE_TS = 1_700_000_000_000L;
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};

    record Rec(int partition, long offset, String key, String value, List<String> headers, long ts) {}

    static byte[] b(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }
    static String s(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }

    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties common = new Properties();
        common.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);

        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
        }
        Thread.sleep(300);  // leadership arrives through the controller; producers retry anyway

        List<Rec> produced = new ArrayList<>();
        int n = 0;
        for (String codec : CODECS) {
            Properties pp = new Properties();
            pp.putAll(common);
            pp.put("compression.type", codec);
            pp.put("linger.ms", "5");
            pp.put("key.serializer", ByteArraySerializer.class.getName());
            pp.put("value.serializer", ByteArraySerializer.class.getName());
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
                List<Object[]> pending = new ArrayList<>();
                for (int i = 0; i < PER_CODEC; i++, n++) {
                    int part = n % PARTITIONS;
                    String key = i == 3 ? null : "key-" + codec + "-" + i;
                    String value = i == 7 ? "" : ("value-" + codec + "-" + i + "-").repeat(1 + i % 4);
                    List<String> hs = i == 5 ? List.of() : i == 7 ? List.of("dup", "a", "dup", "b")
                            : List.of("codec", codec, "seq", Integer.toString(n));
                    List<Header> headers = new ArrayList<>();
                    for (int h = 0; h < hs.size(); h += 2) headers.add(new RecordHeader(hs.get(h), b(hs.get(h + 1))));
                    long ts = BASE_TS + n * 1000L;
                    Future<RecordMetadata> f = p.send(new ProducerRecord<>(topic, part, ts, b(key), b(value), headers));
                    pending.add(new Object[]{f, new Rec(part, -1, key, value, hs, ts)});
                }
                for (Object[] e : pending) {
                    @SuppressWarnings("unchecked")
                    RecordMetadata md = ((Future<RecordMetadata>) e[0]).get();
                    Rec r = (Rec) e[1];
                    check(md.partition() == r.partition(), "partition " + md.partition() + " for " + r);
                    produced.add(new Rec(r.partition(), md.offset(), r.key(), r.value(), r.headers(), r.ts()));
                }
            }
        }

        Properties cp = new Properties();
        cp.putAll(common);
        cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
        cp.put("value.deserializer", ByteArrayDeserializer.class.getName());
        cp.put("enable.auto.commit", "false");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) tps.add(new TopicPartition(topic, p));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            Map<Integer, List<Rec>> got = new TreeMap<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) done &= c.position(tp) >= end.get(tp);
                if (done) break;
                for (ConsumerRecord<byte[], byte[]> m : c.poll(Duration.ofMillis(500))) {
                    List<String> hs = new ArrayList<>();
                    for (Header h : m.headers()) { hs.add(h.key()); hs.add(s(h.value())); }
                    got.computeIfAbsent(m.partition(), k -> new ArrayList<>())
                       .add(new Rec(m.partition(), m.offset(), s(m.key()), s(m.value()), hs, m.timestamp()));
                }
            }
            int total = 0;
            for (int p = 0; p < PARTITIONS; p++) {
                final int part = p;
                List<Rec> want = produced.stream().filter(r -> r.partition() == part)
                        .sorted(Comparator.comparingLong(Rec::offset)).toList();
                List<Rec> have = got.getOrDefault(p, List.of());
                check(want.size() == have.size(), "partition " + p + ": produced " + want.size() + ", read " + have.size());
                for (int i = 0; i < want.size(); i++) {
                    check(have.get(i).offset() == i, "partition " + p + ": offsets not dense: " + have.get(i));
                    check(want.get(i).equals(have.get(i)), "partition " + p + ": read " + have.get(i) + ", produced " + want.get(i));
                }
                total += have.size();
                check(end.get(tps.get(p)) == want.size(), "end offset " + end.get(tps.get(p)) + " for partition " + p);
            }
            // offsets by timestamp: first offset whose timestamp >= the probe
            for (int p = 0; p < PARTITIONS; p++) {
                List<Rec> have = got.get(p);
                long[] probes = {BASE_TS - 5000, have.get(0).ts(), have.get(have.size() / 2).ts() + 1,
                                 have.get(have.size() - 1).ts(), have.get(have.size() - 1).ts() + 1};
                for (long ts : probes) {
                    Long want = null;
                    for (Rec r : have) if (r.ts() >= ts) { want = r.offset(); break; }
                    TopicPartition tp = tps.get(p);
                    OffsetAndTimestamp ot = c.offsetsForTimes(Map.of(tp, ts)).get(tp);
                    Long gotOff = ot == null ? null : ot.offset();
                    check(Objects.equals(want, gotOff), "offsetsForTimes p" + p + " ts " + ts + ": got " + gotOff + ", want " + want);
                }
            }
            System.out.println("OK " + total + " records");
        }

        try (Admin admin = Admin.create(common)) {
            admin.deleteTopics(List.of(topic)).all().get();
        }
    }
}
