// One consumer-group member on the Java client (kafka-clients 3.9.1, classic group protocol),
// for test_groups_java.py; run as a JDK 17 single-file program:
//     java -cp <jars> JavaGroupMember.java BOOTSTRAP TOPIC GROUP (eager|cooperative)
// eager = RangeAssignor, cooperative = CooperativeStickyAssignor.
// Prints one JSON line per event on stdout, as tests/integration/groups/member.py does:
// {"assigned": [partitions]} whenever its assignment changes, {"record": [partition, offset]}
// per record (before the commitSync that follows each non-empty poll), {"closed": true} after
// close(). SIGTERM runs the shutdown hook: wakeup() the poll loop, which commits and closes
// (LeaveGroup); SIGKILL from the test is a crash (the coordinator's session timeout).

import java.time.Duration;
import java.util.*;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class JavaGroupMember {
    static volatile boolean stop = false;

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], assignor = args[3];
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
              (assignor.equals("cooperative") ? CooperativeStickyAssignor.class
                                              : RangeAssignor.class).getName());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        CountDownLatch done = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;
            consumer.wakeup();
            try {
                done.await();
            } catch (InterruptedException e) {
                main.interrupt();
            }
        }));
        consumer.subscribe(List.of(topic));
        List<Integer> last = null;
        try {
            while (!stop) {
                ConsumerRecords<byte[], byte[]> recs;
                try {
                    recs = consumer.poll(Duration.ofMillis(100));
                } catch (WakeupException e) {
                    break;
                }
                for (ConsumerRecord<byte[], byte[]> r : recs)
                    emit("{\"record\": [" + r.partition() + ", " + r.offset() + "]}");
                List<Integer> now = new ArrayList<>();
                for (TopicPartition tp : consumer.assignment())
                    now.add(tp.partition());
                Collections.sort(now);
                if (!now.equals(last)) {
                    last = now;
                    emit("{\"assigned\": " + now + "}");
                }
                if (!recs.isEmpty()) {
                    try {
                        consumer.commitSync();
                    } catch (WakeupException e) {
                        break;
                    } catch (KafkaException e) {
                        // a rebalance fenced this commit; the records come again to the new owner
                    }
                }
            }
        } finally {
            try {
                consumer.commitSync();
            } catch (KafkaException e) {
                // nothing owned or fenced: the last successful commit stands
            }
            consumer.close();
            emit("{\"closed\": true}");
            done.countDown();
        }
    }
}
