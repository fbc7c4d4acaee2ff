// One group member on the Java client (kafka-clients 3.9.1) that logs its partition ownership,
// for test_consumer_protocol_clients.py; compiled with javac, then run as
//     java -cp <jars>:<classes> JavaConsumerProtocolMember BOOTSTRAP TOPIC GROUP PROTOCOL EVENTS NAME [ASSIGNOR]
// PROTOCOL: consumer (KIP-848, group.protocol=consumer, ASSIGNOR as group.remote.assignor; the
// session and heartbeat times come from the broker), cooperative (classic, CooperativeSticky) or
// eager (classic, Range).
// Events are appended to EVENTS, one JSON line each, in the format of
// tests/integration/groups/ownership_checker.py, stamped with System.nanoTime() (CLOCK_MONOTONIC
// on Linux, the clock of Python's time.monotonic_ns()): "assign" at the entry of
// onPartitionsAssigned, "revoke"/"lost" at the exit of onPartitionsRevoked/onPartitionsLost
// (all three run inside poll() on this thread), "records" per non-empty poll (t0 before it, t
// after it). commitSync after each non-empty poll and in onPartitionsRevoked (the one after a poll
// may be refused: STALE_MEMBER_EPOCH when the member's epoch moved on meanwhile), so a revoked
// partition's records are committed before the revoke ends.
// SIGTERM runs the shutdown hook: wakeup() the poll loop, which closes (revoke, leave group).

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class JavaConsumerProtocolMember {
    static volatile boolean stop = false;
    static OutputStream out;

    static synchronized void emit(String ev, long t, String fields) {
        String line = "{\"t\": " + t + ", \"ev\": \"" + ev + "\"" + (fields.isEmpty() ? "" : ", " + fields) + "}\n";
        try {
            out.write(line.getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    static String tps(Collection<TopicPartition> parts) {
        StringBuilder b = new StringBuilder("\"tps\": [");
        boolean first = true;
        for (TopicPartition tp : parts) {
            b.append(first ? "" : ", ").append("[").append(quote(tp.topic())).append(", ").append(tp.partition()).append("]");
            first = false;
        }
        return b.append("]").toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], protocol = args[3];
        String events = args[4], name = args[5];
        String assignor = args.length > 6 ? args[6] : null;
        out = new FileOutputStream(events, true);

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        if (protocol.equals("consumer")) {
            p.put("group.protocol", "consumer");
            if (assignor != null)
                p.put("group.remote.assignor", assignor);
        } else {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                  (protocol.equals("cooperative") ? CooperativeStickyAssignor.class
                                                  : RangeAssignor.class).getName());
        }
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        emit("start", System.nanoTime(), "\"member\": " + quote(name) + ", \"pid\": "
             + ProcessHandle.current().pid() + ", \"protocol\": " + quote(protocol));
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;
            consumer.wakeup();
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                emit("assign", System.nanoTime(), tps(parts));
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                // what was polled since the last commit (which may have been refused)
                try {
                    consumer.commitSync();
                } catch (KafkaException e) {
                    emit("commit_error", System.nanoTime(), "\"error\": " + quote(e.toString()));
                }
                emit("revoke", System.nanoTime(), tps(parts));
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> parts) {
                emit("lost", System.nanoTime(), tps(parts));
            }
        });
        try {
            while (!stop) {
                long t0 = System.nanoTime();
                ConsumerRecords<byte[], byte[]> recs;
                try {
                    recs = consumer.poll(Duration.ofMillis(100));
                } catch (WakeupException e) {
                    break;
                } catch (KafkaException e) {
                    emit("consume_error", System.nanoTime(), "\"errors\": [" + quote(e.toString()) + "]");
                    continue;
                }
                long t1 = System.nanoTime();
                if (recs.isEmpty())
                    continue;
                StringBuilder b = new StringBuilder("\"t0\": " + t0 + ", \"recs\": [");
                boolean first = true;
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    b.append(first ? "" : ", ").append("[").append(quote(r.topic())).append(", ")
                     .append(r.partition()).append(", ").append(r.offset()).append("]");
                    first = false;
                }
                emit("records", t1, b.append("]").toString());
                try {
                    consumer.commitSync();
                } catch (WakeupException e) {
                    break;
                } catch (KafkaException e) {
                    emit("commit_error", System.nanoTime(), "\"error\": " + quote(e.toString()));
                }
            }
        } finally {
            try {
                consumer.commitSync();     // a wakeup may have cut the last one short
            } catch (KafkaException e) {
                emit("commit_error", System.nanoTime(), "\"error\": " + quote(e.toString()));
            }
            try {
                consumer.close();
            } catch (KafkaException e) {
                emit("close_error", System.nanoTime(), "\"error\": " + quote(e.toString()));
            }
            emit("closed", System.nanoTime(), "");
            done.countDown();
        }
    }
}
