// Byte-exact oracle: the Java Kafka client's own message classes (kafka-clients 3.9.1).
//
// Run once per test session (JDK 17 single-file source launch, no build tool):
//   java -cp <kafka-clients.jar:...> tests/oracle/KafkaOracle.java
//
// Line protocol on stdin/stdout (UTF-8, one command per line, one answer per line):
//   versions                                  -> "ok <key>:<lo>:<hi>,..." (every ApiMessageType;
//                                                hi includes an unstable latest version)
//   batch <n>                                 -> the next n lines are commands; all n are read
//                                                before any answer is written, then n answers
//   decode-encode <kind> <key> <ver> <hex>    -> "ok <hex> <fields>": Data.read(bytes, ver) then
//                                                MessageUtil.toByteBuffer(data, ver)
//   random <kind> <key> <ver> <seed>          -> "ok <hex> <fields>": a random Struct built by
//                                                walking the Schema of that version, written
//                                                with Schema.write, then normalized by
//                                                Data.read + MessageUtil (canonical bytes)
// <fields> renders the answer's bytes as read by the generic Schema of that version, so a
// caller can compare field names, order, values and tag numbers, not only bytes:
//   struct  {name:value,...,#[tag=name:value,tag=?rawhex]}   (tagged section last, by tag;
//                                                              names lower-case, no '_')
//   array [v,v]   null: null   ints: decimal   bool: true/false   float64: raw bits decimal
//   string: hex of UTF-8   bytes/records: hex   uuid: 32 hex digits
//   quit
// kind is "request" or "response"; any failure answers "err <one-line reason>".
// "batch" exists so the Python side can send many cases per round trip without either
// pipe filling up while the other side is blocked writing.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;
import org.apache.kafka.common.record.MemoryRecords;

public class KafkaOracle {
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    // Mixed alphabet so UTF-8 lengths differ from character counts (multi-byte and surrogates).
    private static final String[] GLYPHS = {"a", "b", "z", "0", "-", "_", ".", " ", "\u00e9",
        "\u00df", "\u5b57", "\u20ac", "\ud83d\ude00"};

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        out.write("ready\n");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) continue;
            if (line.equals("quit")) break;
            if (line.startsWith("batch ")) {
                int n = Integer.parseInt(line.substring(6).trim());
                List<String> cmds = new ArrayList<>(n);
                for (int i = 0; i < n; i++) cmds.add(in.readLine());
                for (String cmd : cmds) {
                    out.write(answer(cmd));
                    out.write('\n');
                }
            } else {
                out.write(answer(line));
                out.write('\n');
            }
            out.flush();
        }
        out.flush();
    }

    static String answer(String cmd) {
        try {
            return "ok " + run(cmd.trim().split(" "));
        } catch (Throwable t) {
            String msg = t.getClass().getSimpleName() + ": " + t.getMessage();
            return "err " + msg.replace('\n', ' ').replace('\r', ' ');
        }
    }

    static String run(String[] p) {
        switch (p[0]) {
            case "versions":
                return versions();
            case "decode-encode":
                return withFields(p[1], Short.parseShort(p[2]), Short.parseShort(p[3]),
                    decodeEncode(p[1], Short.parseShort(p[2]), Short.parseShort(p[3]),
                        unhex(p.length > 4 ? p[4] : "")));
            case "random":
                return withFields(p[1], Short.parseShort(p[2]), Short.parseShort(p[3]),
                    randomBytes(p[1], Short.parseShort(p[2]), Short.parseShort(p[3]),
                        Long.parseLong(p[4])));
            default:
                throw new IllegalArgumentException("unknown command " + p[0]);
        }
    }

    static String versions() {
        StringBuilder sb = new StringBuilder();
        for (ApiMessageType t : ApiMessageType.values()) {
            if (sb.length() > 0) sb.append(',');
            sb.append(t.apiKey()).append(':').append(t.lowestSupportedVersion())
              .append(':').append(t.highestSupportedVersion(true));
        }
        return sb.toString();
    }

    static ApiMessage newMessage(String kind, short key) {
        ApiMessageType t = ApiMessageType.fromApiKey(key);
        if (kind.equals("request")) return t.newRequest();
        if (kind.equals("response")) return t.newResponse();
        throw new IllegalArgumentException("kind must be request or response: " + kind);
    }

    static Schema[] schemas(String kind, short key) {
        ApiMessageType t = ApiMessageType.fromApiKey(key);
        return kind.equals("request") ? t.requestSchemas() : t.responseSchemas();
    }

    /** Kafka's generated reader, then MessageUtil's writer; refuses trailing bytes. */
    static byte[] decodeEncode(String kind, short key, short version, byte[] body) {
        ApiMessage msg = newMessage(kind, key);
        checkVersion(msg, version);
        ByteBuffer buf = ByteBuffer.wrap(body);
        msg.read(new ByteBufferAccessor(buf), version);
        if (buf.hasRemaining()) {
            throw new IllegalStateException(buf.remaining() + " trailing bytes after "
                + msg.getClass().getSimpleName() + " v" + version);
        }
        ByteBuffer enc = MessageUtil.toByteBuffer(msg, version);
        return MessageUtil.byteBufferToArray(enc);
    }

    static void checkVersion(ApiMessage msg, short version) {
        if (version < msg.lowestSupportedVersion() || version > msg.highestSupportedVersion()) {
            throw new IllegalArgumentException("unsupported version " + version + " of "
                + msg.getClass().getSimpleName() + " (" + msg.lowestSupportedVersion() + "-"
                + msg.highestSupportedVersion() + ")");
        }
    }

    static byte[] randomBytes(String kind, short key, short version, long seed) {
        Schema[] all = schemas(kind, key);
        if (version < 0 || version >= all.length || all[version] == null) {
            throw new IllegalArgumentException("no schema for " + kind + " " + key + " v" + version);
        }
        Schema schema = all[version];
        Struct struct = randomStruct(schema, new Random(seed), 0);
        ByteBuffer buf = ByteBuffer.allocate(schema.sizeOf(struct));
        schema.write(buf, struct);
        return decodeEncode(kind, key, version, buf.array());
    }

    // ------------------------------------------------------------ random values by Schema

    static Struct randomStruct(Schema schema, Random rnd, int depth) {
        Struct s = new Struct(schema);
        for (BoundField f : schema.fields()) {
            s.set(f, randomValue(f.def.type, rnd, depth));
        }
        return s;
    }

    static Object randomValue(Type type, Random rnd, int depth) {
        if (type instanceof Schema) return randomStruct((Schema) type, rnd, depth + 1);
        if (type instanceof TaggedFields) return randomTagged((TaggedFields) type, rnd, depth);
        if (type instanceof ArrayOf || type instanceof CompactArrayOf) {
            if (type.isNullable() && rnd.nextInt(5) == 0) return null;
            Type elem = type.arrayElementType().get();
            int n = rnd.nextInt(depth >= 3 ? 2 : 4);
            Object[] arr = new Object[n];
            for (int i = 0; i < n; i++) arr[i] = randomValue(elem, rnd, depth + 1);
            return arr;
        }
        if (type == Type.BOOLEAN) return rnd.nextBoolean();
        if (type == Type.INT8) return (byte) pick(rnd, Byte.MIN_VALUE, Byte.MAX_VALUE);
        if (type == Type.INT16) return (short) pick(rnd, Short.MIN_VALUE, Short.MAX_VALUE);
        if (type == Type.UINT16) return (int) pick(rnd, 0, 65535);
        if (type == Type.INT32) return (int) pick(rnd, Integer.MIN_VALUE, Integer.MAX_VALUE);
        if (type == Type.UNSIGNED_INT32) return pick(rnd, 0, 4294967295L);
        if (type == Type.INT64) return pick(rnd, Long.MIN_VALUE, Long.MAX_VALUE);
        if (type == Type.FLOAT64) return rnd.nextInt(4) == 0 ? 0.0 : (rnd.nextDouble() - 0.5) * 1e6;
        if (type == Type.UUID) return rnd.nextInt(4) == 0 ? Uuid.ZERO_UUID
            : new Uuid(rnd.nextLong(), rnd.nextLong());
        if (type == Type.STRING || type == Type.COMPACT_STRING) return randomString(rnd);
        if (type == Type.NULLABLE_STRING || type == Type.COMPACT_NULLABLE_STRING)
            return rnd.nextInt(5) == 0 ? null : randomString(rnd);
        if (type == Type.BYTES || type == Type.COMPACT_BYTES) return ByteBuffer.wrap(randomBytes(rnd, 8));
        if (type == Type.NULLABLE_BYTES || type == Type.COMPACT_NULLABLE_BYTES)
            return rnd.nextInt(5) == 0 ? null : ByteBuffer.wrap(randomBytes(rnd, 8));
        if (type == Type.RECORDS || type == Type.COMPACT_RECORDS)
            return rnd.nextInt(5) == 0 ? null
                : MemoryRecords.readableRecords(ByteBuffer.wrap(randomBytes(rnd, 24)));
        throw new IllegalArgumentException("no random value for type " + type);
    }

    /** An int from a mix of edge values and uniform draws, within [lo, hi]. */
    static long pick(Random rnd, long lo, long hi) {
        switch (rnd.nextInt(6)) {
            case 0: return Math.max(lo, Math.min(hi, 0));
            case 1: return Math.max(lo, Math.min(hi, -1));
            case 2: return lo;
            case 3: return hi;
            case 4: return Math.max(lo, Math.min(hi, rnd.nextInt(100)));
            default:
                if (lo == Long.MIN_VALUE && hi == Long.MAX_VALUE) return rnd.nextLong();
                return lo + Math.floorMod(rnd.nextLong(), hi - lo + 1);  // span fits: <= 2^32
        }
    }

    static String randomString(Random rnd) {
        int n = rnd.nextInt(7);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) sb.append(GLYPHS[rnd.nextInt(GLYPHS.length)]);
        return sb.toString();
    }

    static byte[] randomBytes(Random rnd, int max) {
        byte[] b = new byte[rnd.nextInt(max + 1)];
        rnd.nextBytes(b);
        return b;
    }

    @SuppressWarnings("unchecked")
    static Map<Integer, org.apache.kafka.common.protocol.types.Field> taggedFields(TaggedFields tf) {
        try {  // private in Kafka; the source launcher runs us in the unnamed module
            Field f = TaggedFields.class.getDeclaredField("fields");
            f.setAccessible(true);
            return (Map<Integer, org.apache.kafka.common.protocol.types.Field>) f.get(tf);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TaggedFields.fields not readable", e);
        }
    }

    static Object randomTagged(TaggedFields tf, Random rnd, int depth) {
        TreeMap<Integer, Object> values = new TreeMap<>();
        Map<Integer, org.apache.kafka.common.protocol.types.Field> fields = taggedFields(tf);
        for (Map.Entry<Integer, org.apache.kafka.common.protocol.types.Field> e : fields.entrySet()) {
            if (rnd.nextBoolean()) values.put(e.getKey(), randomValue(e.getValue().type, rnd, depth + 1));
        }
        return values;
    }

    // ------------------------------------------------------------ field rendering

    static String withFields(String kind, short key, short version, byte[] bytes) {
        Schema schema = schemas(kind, key)[version];
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        Struct struct = schema.read(buf);
        StringBuilder sb = new StringBuilder(hex(bytes)).append(' ');
        render(sb, struct, schema);
        return sb.toString();
    }

    static String name(String n) {
        return n.replace("_", "").toLowerCase(java.util.Locale.ROOT);
    }

    @SuppressWarnings("unchecked")
    static void render(StringBuilder sb, Object v, Type type) {
        if (v == null) {
            sb.append("null");
        } else if (type instanceof Schema) {
            Struct s = (Struct) v;
            sb.append('{');
            boolean first = true;
            for (BoundField f : ((Schema) type).fields()) {
                if (!first) sb.append(',');
                first = false;
                if (f.def.type instanceof TaggedFields) {
                    renderTagged(sb, (Map<Integer, Object>) s.get(f), (TaggedFields) f.def.type);
                } else {
                    sb.append(name(f.def.name)).append(':');
                    render(sb, s.get(f), f.def.type);
                }
            }
            sb.append('}');
        } else if (type instanceof ArrayOf || type instanceof CompactArrayOf) {
            Type elem = type.arrayElementType().get();
            sb.append('[');
            Object[] arr = (Object[]) v;
            for (int i = 0; i < arr.length; i++) {
                if (i > 0) sb.append(',');
                render(sb, arr[i], elem);
            }
            sb.append(']');
        } else if (v instanceof Boolean) {
            sb.append(((Boolean) v) ? "true" : "false");
        } else if (v instanceof Double) {
            sb.append(Double.doubleToRawLongBits((Double) v));
        } else if (v instanceof Number) {
            sb.append(v);
        } else if (v instanceof String) {
            sb.append(rawHex(((String) v).getBytes(StandardCharsets.UTF_8)));
        } else if (v instanceof ByteBuffer) {
            sb.append(rawHex(MessageUtil.byteBufferToArray((ByteBuffer) v)));
        } else if (v instanceof MemoryRecords) {
            sb.append(rawHex(MessageUtil.byteBufferToArray(((MemoryRecords) v).buffer())));
        } else if (v instanceof Uuid) {
            Uuid u = (Uuid) v;
            sb.append(String.format("%016x%016x", u.getMostSignificantBits(), u.getLeastSignificantBits()));
        } else {
            throw new IllegalArgumentException("cannot render " + v.getClass());
        }
    }

    static void renderTagged(StringBuilder sb, Map<Integer, Object> values, TaggedFields tf) {
        Map<Integer, org.apache.kafka.common.protocol.types.Field> fields = taggedFields(tf);
        sb.append("#[");
        boolean first = true;
        for (Map.Entry<Integer, Object> e : values.entrySet()) {
            if (!first) sb.append(',');
            first = false;
            sb.append(e.getKey()).append('=');
            org.apache.kafka.common.protocol.types.Field f = fields.get(e.getKey());
            if (f == null) {
                sb.append('?').append(rawHex(((RawTaggedField) e.getValue()).data()));
            } else {
                sb.append(name(f.name)).append(':');
                render(sb, e.getValue(), f.type);
            }
        }
        sb.append(']');
    }

    // ------------------------------------------------------------ hex

    /** Hex of the bytes; "-" for none, so a message is never an empty token. */
    static String hex(byte[] b) {
        return b.length == 0 ? "-" : rawHex(b);
    }

    static String rawHex(byte[] b) {
        char[] c = new char[b.length * 2];
        for (int i = 0; i < b.length; i++) {
            c[2 * i] = HEX[(b[i] >> 4) & 15];
            c[2 * i + 1] = HEX[b[i] & 15];
        }
        return new String(c);
    }

    static byte[] unhex(String s) {
        if (s.equals("-")) return new byte[0];
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }
}
