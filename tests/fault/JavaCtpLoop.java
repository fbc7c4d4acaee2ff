// A consume-transform-produce loop on the Java client (kafka-clients 3.9.1, JDK 17
// single-file source launch) for tests/fault/test_txn_client_kills.py:
//
//     java -cp CLASSPATH JavaCtpLoop.java BOOTSTRAP INPUT OUTPUT GROUP TXN_ID TOTAL HOLD_MS
//
// A read_committed consumer subscribed to INPUT in GROUP (no auto-commit) and a
// transactional producer; each round polls a batch, begins, sends "out-<value>" to the
// same partition of OUTPUT, sends the consumer's positions with the transaction, holds
// it open HOLD_MS (the pace; the line "fast" on stdin drops it) and commits. Requests
// time out after 2 s, the transaction after 60 s (see tests/fault/ctp_loops.py). An
// abortable error aborts and rewinds the consumer to the group's committed
// offsets; a fatal one (ProducerFencedException, InvalidTxnStateException, ... or an
// abort that fails) ends the program with exit status 2. Stops once TOTAL inputs are
// committed. The line protocol on stdout (tests/fault/ctp_loops.py reads it), every
// line "<KIND> <wall ms> <text>":
//
//     STEP    the step the loop enters (poll, begin, produce, hold, send_offsets,
//             commit, abort, rewind, ...)
//     COMMIT  "<seq> <records> <committed so far> <begin wall ms>" once commit returned
//     ABORT   an abortable error, aborted      ERROR  a retried or logged error
//     FATAL   a fatal error (the program exits 2)       READY / DONE
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaCtpLoop {
    static final int BATCH = 20;
    static final String REQUEST_TIMEOUT_MS = "2000";   // tests/fault/ctp_loops.py

    static synchronized void out(String kind, String text) {
        System.out.println(kind + " " + System.currentTimeMillis() + " " + text);
        System.out.flush();
    }

    static void step(String name) {
        out("STEP", name);
    }

    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(e.getClass().getName() + ": " + e.getMessage());
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            sb.append(" <- ").append(c.getClass().getName()).append(": ").append(c.getMessage());
        }
        return sb.toString().replace('\n', ' ');
    }

    static boolean isFatal(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof ProducerFencedException || c instanceof OutOfOrderSequenceException
                    || c instanceof AuthorizationException || c instanceof UnsupportedVersionException
                    || c instanceof InvalidTxnStateException) {
                return true;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return false;
    }

    static void fatal(String where, Throwable e) {
        out("FATAL", where + ": " + describe(e));
        System.exit(2);
    }

    interface Call {
        void run();
    }

    // A transactional call retried after a client-side TimeoutException (the Java
    // client documents that commit / abort / send offsets may be called again then).
    static void retrying(String what, Call call) {
        while (true) {
            try {
                call.run();
                return;
            } catch (TimeoutException e) {
                out("ERROR", what + " timed out, retried: " + describe(e));
            }
        }
    }

    static void rewind(KafkaConsumer<String, String> consumer) {
        step("rewind");
        while (true) {
            try {
                Set<TopicPartition> assigned = consumer.assignment();
                Map<TopicPartition, OffsetAndMetadata> committed =
                        consumer.committed(assigned, Duration.ofSeconds(30));
                for (TopicPartition tp : assigned) {
                    OffsetAndMetadata om = committed.get(tp);
                    if (om == null) {
                        consumer.seekToBeginning(Set.of(tp));
                    } else {
                        consumer.seek(tp, om.offset());
                    }
                }
                return;
            } catch (TimeoutException e) {
                out("ERROR", "committed() timed out, retried: " + describe(e));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], group = args[3];
        String tid = args[4];
        long total = Long.parseLong(args[5]);
        long holdMs = Long.parseLong(args[6]);
        AtomicBoolean fast = new AtomicBoolean(false);
        Thread commands = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.trim().equals("fast")) {
                        fast.set(true);
                    }
                }
            } catch (Exception e) {
                out("ERROR", "stdin: " + describe(e));
            }
        });
        commands.setDaemon(true);
        commands.start();

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(BATCH));
        cp.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        cp.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        // a transaction outlives a fault (tests/fault/ctp_loops.py, TXN_TIMEOUT_MS)
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        consumer.subscribe(Set.of(input));
        step("init");
        try {
            retrying("initTransactions", producer::initTransactions);
        } catch (KafkaException e) {
            fatal("initTransactions", e);
        }
        out("READY", tid);
        long done = 0;
        long seq = 0;
        while (done < total) {
            step("poll");
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
            if (records.isEmpty()) {
                continue;
            }
            seq++;
            long begun = System.currentTimeMillis();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            try {
                step("begin");
                producer.beginTransaction();
                step("produce");
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.partition(), null, "out-" + r.value()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()),
                                new OffsetAndMetadata(r.offset() + 1));
                }
                step("send_offsets");
                retrying("sendOffsetsToTransaction",
                         () -> producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata()));
                if (!fast.get()) {
                    step("hold");
                    Thread.sleep(holdMs);
                }
                step("commit");
                retrying("commitTransaction", producer::commitTransaction);
                done += records.count();
                out("COMMIT", seq + " " + records.count() + " " + done + " " + begun);
            } catch (KafkaException e) {
                if (isFatal(e)) {
                    fatal("transaction " + seq, e);
                }
                out("ABORT", "transaction " + seq + ": " + describe(e));
                step("abort");
                try {
                    retrying("abortTransaction", producer::abortTransaction);
                } catch (KafkaException e2) {
                    fatal("abortTransaction after " + describe(e), e2);
                }
                rewind(consumer);
            }
        }
        out("DONE", String.valueOf(done));
        producer.close(Duration.ofSeconds(5));
        consumer.close(Duration.ofSeconds(5));
    }
}
