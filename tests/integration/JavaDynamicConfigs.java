// The Java admin client (kafka-clients 3.9.1) against dynamic broker configs, run by
// test_dynamic_broker_configs.py as a JDK 17 single-file program:
//     java -cp <jars> JavaDynamicConfigs.java BOOTSTRAP BROKER_ID TOPIC
// 1. incrementalAlterConfigs on the cluster default (BROKER "") SET
//    log.cleaner.min.cleanable.ratio=0.3;
// 2. describeConfigs(includeSynonyms) of BROKER BROKER_ID, the BROKER "" default and
//    TOPIC; prints "CONFIG <resource> <name> <value> <source> [<synonym source>:<name>=<value> ...]"
//    for the keys the test reads;
// 3. the same key deleted again.

import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.config.ConfigResource;

public class JavaDynamicConfigs {
    static final Set<String> KEYS = Set.of("log.retention.ms", "log.cleaner.min.cleanable.ratio",
            "message.max.bytes", "retention.ms", "min.cleanable.dirty.ratio", "num.io.threads");

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        try (Admin admin = Admin.create(p)) {
            ConfigResource def = new ConfigResource(ConfigResource.Type.BROKER, "");
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, args[1]);
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, args[2]);
            admin.incrementalAlterConfigs(Map.of(def, List.of(new AlterConfigOp(
                    new ConfigEntry("log.cleaner.min.cleanable.ratio", "0.3"),
                    AlterConfigOp.OpType.SET)))).all().get();
            Map<ConfigResource, Config> got = admin.describeConfigs(
                    List.of(broker, def, topic),
                    new DescribeConfigsOptions().includeSynonyms(true)).all().get();
            for (ConfigResource r : List.of(broker, def, topic)) {
                for (ConfigEntry e : got.get(r).entries()) {
                    if (!KEYS.contains(e.name())) continue;
                    StringBuilder line = new StringBuilder("CONFIG " + r.type() + ":" + r.name()
                            + " " + e.name() + " " + e.value() + " " + e.source());
                    for (ConfigEntry.ConfigSynonym s : e.synonyms())
                        line.append(" ").append(s.source()).append(":").append(s.name())
                            .append("=").append(s.value());
                    System.out.println(line);
                }
            }
            admin.incrementalAlterConfigs(Map.of(def, List.of(new AlterConfigOp(
                    new ConfigEntry("log.cleaner.min.cleanable.ratio", null),
                    AlterConfigOp.OpType.DELETE)))).all().get();
            System.out.println("DONE");
        }
    }
}
