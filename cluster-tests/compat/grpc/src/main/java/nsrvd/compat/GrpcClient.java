package nsrvd.compat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * The gRPC side of the compatibility suite: a producer, a SimpleConsumer and a PushConsumer of
 * rocketmq-client-java (the RocketMQ 5 gRPC client), all talking to one Proxy. The Proxy takes
 * every route from its NameServers, so all messages arriving proves that the NameServer behind
 * it serves what the Proxy needs.
 *
 * <pre>
 * run --endpoint HOST:PORT --topic T --count N --simple-group G1 --push-group G2 [--timeout S]
 * </pre>
 *
 * Both consumers (each its own group, so each must see every message) start before the
 * producer sends N messages with distinct bodies (only bodies of this run count); then it
 * waits until both have N distinct bodies or S seconds (default 60) passed since the last send,
 * and prints one JSON line:
 * {"sent":N,"sendFailed":0,"simpleDistinct":N,"simpleTotal":..,"pushDistinct":N,"pushTotal":..,
 *  "errors":[..],"consumersStartedMs":..,"sentMs":..,"simpleDoneMs":..,"pushDoneMs":..} (times from
 *  the start; -1: never). Exit status 0 only if every count is N.
 *
 * The process ends with System.exit without closing the clients: closing waits for the
 * consumers' long polls, and nothing here needs it.
 */
public final class GrpcClient {
    private static final int MAX_ERRORS = 20;
    private static final List<String> ERRORS = Collections.synchronizedList(new ArrayList<>());

    private GrpcClient() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || !"run".equals(args[0])) {
            System.err.println("usage: run --endpoint HOST:PORT --topic T --count N --simple-group G1"
                + " --push-group G2 [--timeout S]");
            System.exit(2);
        }
        Map<String, String> opt = parse(args);
        String endpoint = need(opt, "endpoint");
        String topic = need(opt, "topic");
        int count = Integer.parseInt(need(opt, "count"));
        long waitMillis = 1000L * Integer.parseInt(opt.getOrDefault("timeout", "60"));
        // The wait is counted from the last send: a JVM on a loaded machine can take a minute
        // to start the clients and send, and that must not eat the consumers' time.
        AtomicLong deadline = new AtomicLong(Long.MAX_VALUE);
        long t0 = System.currentTimeMillis();
        // Bodies carry this run's id: a consumer group new to a topic may also be handed
        // messages an earlier run left there, and those must not count.
        String run = Long.toString(t0, 36) + "-";

        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration conf = ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
        Map<String, FilterExpression> sub =
            Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG));

        Set<String> pushSeen = ConcurrentHashMap.newKeySet();
        AtomicInteger pushTotal = new AtomicInteger();
        PushConsumer push = provider.newPushConsumerBuilder().setClientConfiguration(conf)
            .setConsumerGroup(need(opt, "push-group")).setSubscriptionExpressions(sub)
            .setConsumptionThreadCount(4)
            .setMessageListener(view -> {
                String b = body(view);
                if (b.startsWith(run)) {
                    pushTotal.incrementAndGet();
                    pushSeen.add(b);
                }
                return ConsumeResult.SUCCESS;
            }).build();

        SimpleConsumer simple = provider.newSimpleConsumerBuilder().setClientConfiguration(conf)
            .setConsumerGroup(need(opt, "simple-group")).setSubscriptionExpressions(sub)
            .setAwaitDuration(Duration.ofSeconds(5)).build();
        Set<String> simpleSeen = ConcurrentHashMap.newKeySet();
        AtomicInteger simpleTotal = new AtomicInteger();
        Thread receiver = new Thread(() -> {
            while (simpleSeen.size() < count && System.currentTimeMillis() < deadline.get()) {
                try {
                    for (MessageView view : simple.receive(16, Duration.ofSeconds(30))) {
                        String b = body(view);
                        if (b.startsWith(run)) {
                            simpleTotal.incrementAndGet();
                            simpleSeen.add(b);
                        }
                        simple.ack(view);
                    }
                } catch (Exception e) {
                    error("simple receive/ack", e);
                    sleep(500);
                }
            }
        }, "simple-receiver");
        receiver.setDaemon(true);
        receiver.start();

        Producer producer = provider.newProducerBuilder().setClientConfiguration(conf).setTopics(topic).build();
        long started = System.currentTimeMillis() - t0;
        int sent = 0;
        int failed = 0;
        for (int i = 0; i < count; i++) {
            Message msg = provider.newMessageBuilder().setTopic(topic).setTag("compat").setKeys("k" + i)
                .setBody((run + i).getBytes(StandardCharsets.UTF_8)).build();
            try {
                producer.send(msg);
                sent++;
            } catch (Exception e) {
                failed++;
                error("send " + i, e);
            }
        }

        long sentAt = System.currentTimeMillis() - t0;
        deadline.set(System.currentTimeMillis() + waitMillis);
        long simpleAt = -1;
        long pushAt = -1;
        while (System.currentTimeMillis() < deadline.get()) {
            if (simpleAt < 0 && simpleSeen.size() >= count) {
                simpleAt = System.currentTimeMillis() - t0;
            }
            if (pushAt < 0 && pushSeen.size() >= count) {
                pushAt = System.currentTimeMillis() - t0;
            }
            if (simpleAt >= 0 && pushAt >= 0) {
                break;
            }
            sleep(100);
        }
        StringBuilder errs = new StringBuilder();
        synchronized (ERRORS) {
            for (String e : ERRORS) {
                errs.append(errs.length() == 0 ? "" : ",").append(json(e));
            }
        }
        System.out.println("{\"sent\":" + sent + ",\"sendFailed\":" + failed
            + ",\"simpleDistinct\":" + simpleSeen.size() + ",\"simpleTotal\":" + simpleTotal.get()
            + ",\"pushDistinct\":" + pushSeen.size() + ",\"pushTotal\":" + pushTotal.get()
            + ",\"errors\":[" + errs + "],\"consumersStartedMs\":" + started + ",\"sentMs\":" + sentAt
            + ",\"simpleDoneMs\":" + simpleAt + ",\"pushDoneMs\":" + pushAt + "}");
        System.out.flush();
        boolean ok = sent == count && simpleSeen.size() == count && pushSeen.size() == count;
        System.exit(ok ? 0 : 1);
    }

    private static String body(MessageView view) {
        ByteBuffer b = view.getBody().duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static void error(String what, Exception e) {
        if (ERRORS.size() < MAX_ERRORS) {
            ERRORS.add(what + ": " + e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    private static String need(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null) {
            System.err.println("missing --" + key);
            System.exit(2);
        }
        return v;
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --key value at " + args[i]);
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        return m;
    }
}
