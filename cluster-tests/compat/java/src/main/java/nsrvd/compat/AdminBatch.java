package nsrvd.compat;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Runs real mqadmin sub-commands (rocketmq-tools, 4.9.7 or 5.3.3, found on the class path at
 * run time) for a list of command lines in one JVM, the way MQAdminStartup.main0 does: find the
 * SubCommand by name, parse its options with ServerUtil.parseCmdLine, set the NameServer address
 * property from -n, call SubCommand.execute(commandLine, options, hook), where hook is what
 * main0 passes too: AclUtils.getAclRPCHook($ROCKETMQ_HOME/conf/tools.yml), an AclClientRPCHook
 * signing every request with the file's accessKey/secretKey (null when there is no such file).
 *
 * <p>Why not one mqadmin process per command: each spends about 5 s idle in client shutdown and
 * Netty's graceful exit, which the suite's time budget cannot afford for ~100 commands. In one
 * JVM the commands run one after another (two admin clients alive at once may get the same
 * client id and refuse to start). The 5.x client's shutdown joins its "NettyEventExecutor"
 * thread, which only notices the stop flag when its 3-second queue poll ends; a watcher thread
 * interrupts that poll while a shutdown is waiting for it, so each command ends at once.
 *
 * <p>Usage: AdminBatch FILE. FILE has one command per line, arguments separated by TAB.
 * Output: for each command i, in order, "@@@CMD i", what the command printed (stdout and stderr),
 * "@@@END i millis".
 */
public final class AdminBatch {
    private static final ThreadLocal<ByteArrayOutputStream> CAPTURE = new ThreadLocal<ByteArrayOutputStream>();

    private AdminBatch() {
    }

    public static void main(String[] args) throws Exception {
        String file = args[args.length - 1];
        final List<String[]> cmds = new ArrayList<String[]>();
        BufferedReader in = new BufferedReader(new InputStreamReader(new FileInputStream(file), StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null;) {
            if (!line.isEmpty()) {
                cmds.add(line.split("\t", -1));
            }
        }
        final PrintStream realOut = System.out;
        final PrintStream realErr = System.err;
        PrintStream dispatch = new PrintStream(new OutputStream() {
            @Override
            public void write(int b) {
                ByteArrayOutputStream c = CAPTURE.get();
                if (c != null) {
                    c.write(b);
                } else {
                    realErr.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                ByteArrayOutputStream c = CAPTURE.get();
                if (c != null) {
                    c.write(b, off, len);
                } else {
                    realErr.write(b, off, len);
                }
            }
        }, true, "UTF-8");
        System.setOut(dispatch);
        System.setErr(dispatch);

        final Admin admin = new Admin();
        startShutdownWatcher();
        for (int i = 0; i < cmds.size(); i++) {
            long t0 = System.currentTimeMillis();
            ByteArrayOutputStream out = admin.runOne(cmds.get(i));
            realOut.println("@@@CMD " + i);
            realOut.write(out.toByteArray());
            realOut.println();
            realOut.println("@@@END " + i + " " + (System.currentTimeMillis() - t0));
            realOut.flush();
        }
        System.exit(0);
    }

    /** Interrupts the 5.x client's event thread while some thread waits in ServiceThread.shutdown. */
    private static void startShutdownWatcher() {
        Thread w = new Thread(new Runnable() {
            @Override
            public void run() {
                while (true) {
                    try {
                        Thread.sleep(25);
                    } catch (InterruptedException e) {
                        return;
                    }
                    boolean waiting = false;
                    java.util.Map<Thread, StackTraceElement[]> all = Thread.getAllStackTraces();
                    for (StackTraceElement[] st : all.values()) {
                        for (StackTraceElement e : st) {
                            if ("shutdown".equals(e.getMethodName()) && e.getClassName().endsWith(".ServiceThread")) {
                                waiting = true;
                                break;
                            }
                        }
                    }
                    if (!waiting) {
                        continue;
                    }
                    for (Thread t : all.keySet()) {
                        if ("NettyEventExecutor".equals(t.getName())) {
                            t.interrupt();
                        }
                    }
                }
            }
        }, "AdminBatch-shutdown-watcher");
        w.setDaemon(true);
        w.start();
    }

    /** Reflection over rocketmq-tools, so that one jar drives both 4.9.7 and 5.3.3. */
    private static final class Admin {
        private final List<?> subCommands;
        private final Class<?> optionsClass;
        private final Class<?> cmdLineClass;
        private final Class<?> parserClass;
        private final Class<?> hookClass;
        private final Class<?> subCommandClass;
        private final Method buildBase;
        private final Method parseCmdLine;

        Admin() throws Exception {
            Class<?> startup = Class.forName("org.apache.rocketmq.tools.command.MQAdminStartup");
            System.setProperty("rocketmq.remoting.version", currentVersion());
            try {
                Method initLogback = startup.getDeclaredMethod("initLogback");
                initLogback.setAccessible(true);
                initLogback.invoke(null);
            } catch (NoSuchMethodException e) {
                // 5.x configures its logging from the class path
            }
            startup.getMethod("initCommand").invoke(null);
            Field f;
            try {
                f = startup.getDeclaredField("SUB_COMMANDS"); // 5.x
            } catch (NoSuchFieldException e) {
                f = startup.getDeclaredField("subCommandList"); // 4.9.x
            }
            f.setAccessible(true);
            subCommands = (List<?>) f.get(null);
            optionsClass = Class.forName("org.apache.commons.cli.Options");
            cmdLineClass = Class.forName("org.apache.commons.cli.CommandLine");
            parserClass = Class.forName("org.apache.commons.cli.CommandLineParser");
            hookClass = Class.forName("org.apache.rocketmq.remoting.RPCHook");
            subCommandClass = Class.forName("org.apache.rocketmq.tools.command.SubCommand");
            Class<?> serverUtil = Class.forName("org.apache.rocketmq.srvutil.ServerUtil");
            buildBase = serverUtil.getMethod("buildCommandlineOptions", optionsClass);
            parseCmdLine = serverUtil.getMethod("parseCmdLine", String.class, String[].class, optionsClass, parserClass);
        }

        /** MQAdminStartup.main0's hook: credentials from $ROCKETMQ_HOME/conf/tools.yml, if present. */
        private static Object aclHook() throws Exception {
            String home = System.getProperty("rocketmq.home.dir", System.getenv("ROCKETMQ_HOME"));
            File tools = new File(home + "/conf/tools.yml");
            if (home == null || !tools.isFile()) {
                return null;
            }
            Class<?> utils = Class.forName("org.apache.rocketmq.acl.common.AclUtils");
            return utils.getMethod("getAclRPCHook", String.class).invoke(null, tools.getPath());
        }

        private static String currentVersion() throws Exception {
            Class<?> v = Class.forName("org.apache.rocketmq.common.MQVersion");
            return String.valueOf(v.getField("CURRENT_VERSION").getInt(null));
        }

        ByteArrayOutputStream runOne(String[] argv) {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            CAPTURE.set(buf);
            try {
                Object cmd = null;
                for (Object c : subCommands) {
                    String name = (String) subCommandClass.getMethod("commandName").invoke(c);
                    if (name.equalsIgnoreCase(argv[0])) {
                        cmd = c;
                        break;
                    }
                }
                if (cmd == null) {
                    System.out.printf("The sub command %s not exist.%n", argv[0]);
                    return buf;
                }
                String name = (String) subCommandClass.getMethod("commandName").invoke(cmd);
                Object options = buildBase.invoke(null, optionsClass.getConstructor().newInstance());
                Object full = subCommandClass.getMethod("buildCommandlineOptions", optionsClass).invoke(cmd, options);
                Object parser = Class.forName("org.apache.commons.cli.PosixParser").getConstructor().newInstance();
                String[] sub = Arrays.copyOfRange(argv, 1, argv.length);
                Object cl = parseCmdLine.invoke(null, "mqadmin " + name, sub, full, parser);
                if (cl == null) {
                    System.out.println("[AdminBatch] command line not parsed");
                    return buf;
                }
                if ((Boolean) cmdLineClass.getMethod("hasOption", char.class).invoke(cl, 'n')) {
                    System.setProperty("rocketmq.namesrv.addr",
                        (String) cmdLineClass.getMethod("getOptionValue", char.class).invoke(cl, 'n'));
                }
                subCommandClass.getMethod("execute", cmdLineClass, optionsClass, hookClass).invoke(cmd, cl, options, aclHook());
            } catch (InvocationTargetException e) {
                e.getCause().printStackTrace(System.out);
            } catch (Throwable e) {
                e.printStackTrace(System.out);
            } finally {
                System.out.flush();
                CAPTURE.remove();
            }
            return buf;
        }
    }
}
