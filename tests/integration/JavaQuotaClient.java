// The Java client (kafka-clients 3.9.1) against client quotas, run by
// test_client_quotas.py as a JDK 17 single-file program:
//     java -cp <jars> JavaQuotaClient.java produce BOOTSTRAP TOPIC CLIENT_ID SECONDS RECORD_BYTES
//         a producer with client.id CLIENT_ID sending RECORD_BYTES-byte records as fast as it
//         can for SECONDS from its first acknowledgement; prints "RESULT acked_bytes=<bytes
//         acked within those SECONDS>
//         seconds=<S> throttle_avg=<produce-throttle-time-avg> throttle_max=<...-max>"
//     java -cp <jars> JavaQuotaClient.java admin BOOTSTRAP
//         Admin.alterClientQuotas on client-id java-app (producer_byte_rate=2048) and the
//         default user (consumer_byte_rate=4096), then describeClientQuotas; prints
//         "QUOTA <entity> <values>" per entity described.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaQuotaClient {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("produce")) produce(args[1], args[2], args[3],
                                               Integer.parseInt(args[4]), Integer.parseInt(args[5]));
        else admin(args[1]);
    }

    static void produce(String bootstrap, String topic, String clientId, int seconds, int size)
            throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("acks", "1");
        p.put("enable.idempotence", "false");
        p.put("linger.ms", "5");
        p.put("batch.size", "262144");
        p.put("buffer.memory", "8388608");
        byte[] value = new byte[size];
        AtomicLong acked = new AtomicLong(), firstAck = new AtomicLong();
        long window = seconds * 1000L;
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        // the SECONDS measured run from the first acknowledgement (start-up excluded)
        while (firstAck.get() == 0 || System.currentTimeMillis() < firstAck.get() + window) {
            producer.send(new ProducerRecord<>(topic, value), (md, e) -> {
                long now = System.currentTimeMillis();
                firstAck.compareAndSet(0, now);
                if (e == null && now <= firstAck.get() + window) acked.addAndGet(size);
            });
        }
        double avg = 0, max = 0;
        for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
            MetricName n = m.getKey();
            if (!n.group().equals("producer-metrics")) continue;
            Object v = m.getValue().metricValue();
            if (!(v instanceof Double)) continue;
            if (n.name().equals("produce-throttle-time-avg")) avg = (Double) v;
            if (n.name().equals("produce-throttle-time-max")) max = (Double) v;
        }
        producer.close(Duration.ZERO);
        System.out.println("RESULT acked_bytes=" + acked.get() + " seconds=" + seconds
                           + " throttle_avg=" + avg + " throttle_max=" + max);
    }

    static void admin(String bootstrap) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            ClientQuotaEntity app = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "java-app"));
            Map<String, String> defaultUserMap = new HashMap<>();
            defaultUserMap.put(ClientQuotaEntity.USER, null);
            ClientQuotaEntity defaultUser = new ClientQuotaEntity(defaultUserMap);
            admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(app, List.of(
                    new ClientQuotaAlteration.Op("producer_byte_rate", 2048.0))),
                new ClientQuotaAlteration(defaultUser, List.of(
                    new ClientQuotaAlteration.Op("consumer_byte_rate", 4096.0))))).all().get();
            Map<ClientQuotaEntity, Map<String, Double>> described = admin.describeClientQuotas(
                ClientQuotaFilter.all()).entities().get();
            for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : described.entrySet())
                System.out.println("QUOTA " + new TreeMap<>(e.getKey().entries()) + " "
                                   + new TreeMap<>(e.getValue()));
            Map<ClientQuotaEntity, Map<String, Double>> one = admin.describeClientQuotas(
                ClientQuotaFilter.containsOnly(List.of(
                    ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, "java-app"))))
                .entities().get();
            System.out.println("ONE " + one.size() + " " + one.get(app));
        }
    }
}
