// A transactional producer on the Java client (kafka-clients 3.9.1) for
// tests/integration/test_transactions.py: java -cp ... JavaTransactions.java BOOTSTRAP TOPIC TID
// Runs commit, abort, commit (12 records each over 3 partitions, values "<label>-<i>")
// and prints "DONE" once the last commit returned.
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaTransactions {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[2]);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10000);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        String[] labels = {"j1", "ja", "j2"};
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (String label : labels) {
                producer.beginTransaction();
                for (int i = 0; i < 12; i++) {
                    producer.send(new ProducerRecord<>(args[1], i % 3, null, label + "-" + i));
                }
                if (label.equals("ja")) {
                    producer.flush();
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
        System.out.println("DONE");
    }
}
