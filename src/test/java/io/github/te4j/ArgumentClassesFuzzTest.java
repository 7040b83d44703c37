package io.github.te4j;

import io.github.te4j.exchange.Deadline;
import io.github.te4j.exchange.ExchangeAddress;
import io.github.te4j.exchange.Exchanges;
import io.github.te4j.exchange.HandleExchange;
import io.github.te4j.exchange.InMemorySegmentDirectory;
import io.github.te4j.exchange.LaunchEnvironment;
import io.github.te4j.exchange.SegmentDirectory;
import io.github.te4j.rendezvous.FileExchange;
import io.github.te4j.rendezvous.Rendezvous;
import io.github.te4j.rendezvous.RendezvousException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Issue 32, findings 5 and 6, as classes of input rather than instances: every public method of
 * the exported API on live objects (an engine, its transport, buffer, agent, batch, segment, stream,
 * context, directories, world-of-one exchanges, builders, addresses) is called by reflection
 *
 * <ul>
 * <li>with null in each reference parameter in turn (the others given ordinary values): it must
 *     not throw NullPointerException (the packages' rule: IllegalArgumentException naming it), nor
 *     anything undocumented;</li>
 * <li>with each extreme timeout in each Duration parameter (0, 1 ns, 1 ms, Long.MAX_VALUE seconds,
 *     the largest Duration, -1 ns): it must not throw ArithmeticException or anything undocumented.
 *     Calls are bounded (10 s each); one that legitimately waits "forever" is closed away and counted.</li>
 * </ul>
 *
 * <p>Plus the instances named in the issue: oversized options, huge rendezvous timeouts that must work.
 * The figures (methods, calls, refusals by class) are printed and written to target/reliability.
 */
public class ArgumentClassesFuzzTest
{
    private static final Duration[] EXTREME = {Duration.ZERO, Duration.ofNanos(1), Duration.ofMillis(1),
        Duration.ofSeconds(Long.MAX_VALUE), Duration.ofSeconds(Long.MAX_VALUE, 999_999_999),
        Duration.ofNanos(Long.MAX_VALUE), Duration.ofNanos(-1)};

    /** The live objects the calls are made on, rebuilt when a call closed one. */
    private static final class World implements AutoCloseable
    {
        final TransferEngine engine = TransferEngine.builder().platform(Platform.HOST).build();
        final P2pTransport p2p = engine.getOrCreateP2pTransport(1);
        final DeviceBuffer buffer = p2p.allocateBuffer(4096);
        final IpcHandle handle = p2p.exportHandle(buffer);
        final CommContext ctx = p2p.importPeerHandles(buffer, 0, java.util.Arrays.asList((IpcHandle) null), 1);
        final OpStream stream = engine.createStream();
        final TransferAgent agent = engine.createTransferAgent(p2p, "argfuzz");
        final RegisteredMemory memory = agent.registerLocalMemory(buffer);
        final InMemorySegmentDirectory dir = InMemorySegmentDirectory.open("argfuzz" + System.nanoTime());
        final SegmentHandle segment;
        final TransferBatch batch = agent.allocateBatch(4);
        final Rendezvous rendezvous = Rendezvous.builder().rank(0).worldSize(1).endpoint("127.0.0.1", 0).build();
        final Path files;
        final FileExchange fileExchange;

        World() throws Exception
        {
            agent.publishSegment(dir);
            segment = agent.openSegment("argfuzz");
            files = Files.createTempDirectory("te4j-argfuzz");
            fileExchange = FileExchange.builder().directory(files).rank(0).worldSize(1).build();
        }

        List<Object> receivers()
        {
            return List.of(engine, p2p, buffer, handle, ctx, stream, agent, agent.notifications(), memory, dir, segment,
                batch, rendezvous, fileExchange, TransferEngine.builder(), Rendezvous.builder(), FileExchange.builder(),
                ExchangeAddress.parse("tcp://127.0.0.1:1?timeout=5s"), new TransferDescriptors(4));
        }

        boolean broken()
        {
            for (final Object o : receivers())
            {
                if (o instanceof NativeResource && ((NativeResource) o).isClosed())
                {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void close()
        {
            engine.close();
            dir.close();
            rendezvous.close();
            fileExchange.close();
        }
    }

    /** Static entry points of the exported API, called the same way (receiver null). */
    private static final List<Class<?>> STATICS = List.of(TransferRequest.class, IpcHandle.class, Exchanges.class,
        ExchangeAddress.class, LaunchEnvironment.class, InMemorySegmentDirectory.class, SegmentDirectory.class,
        RdmaMetadata.class, Deadline.class, KernelImage.class, LaunchConfig.class);

    /** Methods that wait for other ranks or other threads by design, or end the process's objects. */
    private static final List<String> SKIP = List.of("close", "equals", "wait", "notify", "notifyAll", "hashCode",
        "getClass", "toString", "fromEnvironment");

    private final Map<String, Integer> refusals = new TreeMap<>();
    private final List<String> violations = new ArrayList<>();
    private int calls;
    private int methods;
    private int waited;

    @Test(groups = "host", timeOut = 600_000)
    public void nullInEveryReferenceParameterAndExtremeTimeouts() throws Exception
    {
        World w = new World();
        try
        {
            final List<Object[]> targets = new ArrayList<>();
            for (final Object r : w.receivers())
            {
                targets.add(new Object[] {r.getClass(), r});
            }
            for (final Class<?> c : STATICS)
            {
                targets.add(new Object[] {c, null});
            }
            for (int t = 0; t < targets.size(); t++)
            {
                final Class<?> type = (Class<?>) targets.get(t)[0];
                for (final Method m : type.getMethods())
                {
                    if (SKIP.contains(m.getName()) || m.getDeclaringClass() == Object.class
                        || (targets.get(t)[1] == null) != Modifier.isStatic(m.getModifiers())
                        || !Modifier.isPublic(m.getDeclaringClass().getModifiers()))
                    {
                        continue;
                    }
                    final Class<?>[] ps = m.getParameterTypes();
                    boolean counted = false;
                    for (int i = 0; i < ps.length; i++)
                    {
                        if (w.broken())
                        {
                            w.close();
                            w = new World();
                        }
                        final Object receiver = receiverOf(w, type, targets.get(t)[1]);
                        if (!ps[i].isPrimitive())
                        {
                            counted = true;
                            final Object[] args = ordinary(w, ps);
                            args[i] = null;
                            call(w, m, receiver, args, "null #" + i);
                        }
                        if (ps[i] == Duration.class)
                        {
                            for (final Duration d : EXTREME)
                            {
                                final Object[] args = ordinary(w, ps);
                                args[i] = d;
                                call(w, m, receiver, args, d.toString());
                            }
                        }
                    }
                    methods += counted ? 1 : 0;
                }
            }
        }
        finally
        {
            w.close();
        }
        final String figures = "methods=" + methods + " calls=" + calls + " waitedPast10s=" + waited + " refusedBy="
            + refusals + " violations=" + violations.size();
        Files.createDirectories(Path.of("target", "reliability"));
        Files.writeString(Path.of("target", "reliability", "argument-classes.txt"), figures + "\n");
        System.out.println("Argument classes: " + figures);
        Assert.assertTrue(violations.isEmpty(), String.join("\n", violations));
        Assert.assertTrue(methods >= 80, "only " + methods + " methods were reached");
    }

    /** The issue's instances of finding 6: each null names its parameter in an IllegalArgumentException. */
    @Test(groups = "host", timeOut = 60_000)
    public void theIssuesNullsAreIllegalArguments() throws Exception
    {
        try (World w = new World())
        {
            final Map<String, String> nullKey = new HashMap<>();
            nullKey.put(null, "x");
            final Map<String, String> nullValue = new HashMap<>();
            nullValue.put("timeout", null);
            final ExchangeAddress a = ExchangeAddress.parse("mem://x");
            final Object[][] cases = {
                {"options", (Runnable) () -> a.withOptions(null)},
                {"an option's key", (Runnable) () -> a.withOptions(nullKey)},
                {"option timeout's value", (Runnable) () -> Exchanges.openDirectory("mem://x", nullValue)},
                {"segmentName", (Runnable) () -> w.engine.createTransferAgent(w.p2p, null)},
                {"name", (Runnable) () -> w.agent.openSegment(null)},
                {"name", (Runnable) () -> w.dir.publish(null, new byte[1])},
                {"descriptor", (Runnable) () -> w.dir.publish("x", null)},
                {"name", (Runnable) () -> w.dir.lookup(null)},
                {"name", (Runnable) () -> w.dir.await(null, Duration.ofMillis(1))},
                {"timeout", (Runnable) () -> w.dir.await("argfuzz", null)},
                {"name", (Runnable) () -> w.dir.remove(null)},
                {"listener", (Runnable) () -> w.dir.watch(null)},
                {"uri", (Runnable) () -> ExchangeAddress.parse(null)},
                {"uri", (Runnable) () -> Exchanges.open(null, 0, 1)},
                {"env", (Runnable) () -> LaunchEnvironment.fromEnvironment(null)},
                {"mine", (Runnable) () -> w.rendezvous.allGather(null, Duration.ofSeconds(1))},
                {"mine", (Runnable) () -> w.fileExchange.allGather(null, Duration.ofSeconds(1))},
                {"timeout", (Runnable) () -> w.fileExchange.barrier(null)},
                {"timeout", (Runnable) () -> w.rendezvous.barrier(null)},
                {"data", (Runnable) () -> w.rendezvous.broadcast(0, null, Duration.ofSeconds(1))},
                {"data", (Runnable) () -> w.fileExchange.broadcast(0, null, Duration.ofSeconds(1))},
            };
            for (final Object[] c : cases)
            {
                final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class,
                    ((Runnable) c[1])::run);
                Assert.assertTrue(e.getMessage().contains((String) c[0]), c[0] + ": " + e.getMessage());
            }
        }
    }

    /** Finding 5's instances: an option too big for its int is refused, huge rendezvous timeouts work. */
    @Test(groups = "host", timeOut = 60_000)
    public void oversizedOptionsAreRefusedAndHugeTimeoutsWork() throws Exception
    {
        final IllegalArgumentException e = Assert.expectThrows(IllegalArgumentException.class,
            () -> Exchanges.openDirectory("mem://x?maxDescriptorBytes=99999999999"));
        Assert.assertTrue(e.getMessage().contains("maxDescriptorBytes"), e.getMessage());
        Exchanges.openDirectory("mem://x?maxDescriptorBytes=2147483647").close();
        final Duration forever = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);
        try (Rendezvous r0 = Rendezvous.builder().rank(0).worldSize(2).endpoint("127.0.0.1", 0)
            .handshakeTimeout(forever).connectTimeout(forever).defaultTimeout(forever).build())
        {
            final AtomicReference<Object> r1 = new AtomicReference<>();
            final Thread joiner = new Thread(() ->
            {
                try
                {
                    r1.set(Rendezvous.builder().rank(1).worldSize(2).endpoint("127.0.0.1", r0.port())
                        .handshakeTimeout(forever).connectTimeout(forever).defaultTimeout(forever).build());
                }
                catch (final RuntimeException x)
                {
                    r1.set(x);
                }
            });
            joiner.start();
            joiner.join(30_000);
            Assert.assertTrue(r1.get() instanceof Rendezvous, "rank 1 joins a rank 0 with huge timeouts: " + r1.get());
            try (Rendezvous member = (Rendezvous) r1.get())
            {
                final Thread g = new Thread(() -> member.allGather(new byte[] {1}));
                g.start();
                Assert.assertEquals(r0.allGather(new byte[] {0}).size(), 2);
                g.join(30_000);
            }
        }
    }

    /** The live receiver of the same class in the current world (it may have been rebuilt). */
    private static Object receiverOf(final World w, final Class<?> type, final Object old)
    {
        if (old == null)
        {
            return null;
        }
        for (final Object r : w.receivers())
        {
            if (r.getClass() == type)
            {
                return r;
            }
        }
        return old;
    }

    /** Ordinary values by parameter type: small, valid where a valid one is cheap. */
    private static Object[] ordinary(final World w, final Class<?>[] ps)
    {
        final Object[] out = new Object[ps.length];
        for (int i = 0; i < ps.length; i++)
        {
            final Class<?> p = ps[i];
            if (p == int.class) out[i] = 0;
            else if (p == long.class) out[i] = 0L;
            else if (p == boolean.class) out[i] = false;
            else if (p == byte.class) out[i] = (byte) 0;
            else if (p == short.class) out[i] = (short) 0;
            else if (p == float.class) out[i] = 0f;
            else if (p == double.class) out[i] = 0d;
            else if (p == char.class) out[i] = 'x';
            else if (p == String.class) out[i] = "argfuzz";
            else if (p == Duration.class) out[i] = Duration.ofMillis(1);
            else if (p == byte[].class) out[i] = new byte[1];
            else if (p == int[].class) out[i] = new int[1];
            else if (p == long[].class) out[i] = new long[1];
            else if (p == String[].class) out[i] = new String[0];
            else if (p == Map.class) out[i] = new HashMap<String, String>();
            else if (p == List.class) out[i] = new ArrayList<>();
            else if (p == Optional.class) out[i] = Optional.empty();
            else if (p == Path.class) out[i] = w.files;
            else if (p == Platform.class) out[i] = Platform.HOST;
            else if (p == TransferOpcode.class) out[i] = TransferOpcode.WRITE;
            else if (p == TransferState[].class) out[i] = new TransferState[8];
            else if (p == DeviceBuffer.class) out[i] = w.buffer;
            else if (p == P2pTransport.class) out[i] = w.p2p;
            else if (p == CommContext.class) out[i] = w.ctx;
            else if (p == OpStream.class) out[i] = w.stream;
            else if (p == RegisteredMemory.class) out[i] = w.memory;
            else if (p == SegmentHandle.class) out[i] = w.segment;
            else if (p == TransferDescriptors.class) out[i] = new TransferDescriptors(1);
            else if (p == HandleExchange.class) out[i] = w.fileExchange;
            else if (p == SegmentDirectory.class) out[i] = w.dir;
            else if (p == IpcHandle.class) out[i] = w.handle;
            else if (p == LaunchEnvironment.class) out[i] = new LaunchEnvironment("te4j", 0, 1, 0, Optional.empty(),
                new LinkedHashMap<>());
            else if (p == SegmentDirectory.Listener.class) out[i] = new SegmentDirectory.Listener()
            {
                @Override
                public void published(final String name, final byte[] descriptor)
                {
                }

                @Override
                public void removed(final String name)
                {
                }
            };
            else out[i] = null;
        }
        return out;
    }

    /** One bounded call; judges what it threw. */
    private void call(final World w, final Method m, final Object receiver, final Object[] args, final String what)
        throws InterruptedException
    {
        calls++;
        final AtomicReference<Throwable> thrown = new AtomicReference<>();
        final Thread t = new Thread(() ->
        {
            try
            {
                m.invoke(receiver, args);
            }
            catch (final InvocationTargetException e)
            {
                thrown.set(e.getCause());
            }
            catch (final Throwable e)
            {
                thrown.set(e);
            }
        }, "argfuzz-call");
        t.setDaemon(true);
        t.start();
        t.join(10_000);
        if (t.isAlive())
        {
            // A wait that is allowed to last (e.g. a signal that never comes, "forever"): closing
            // the objects must end it.
            waited++;
            w.engine.close();
            w.rendezvous.close();
            w.fileExchange.close();
            t.join(30_000);
            if (t.isAlive())
            {
                violations.add(name(m) + "(" + what + "): still running 30 s after its objects were closed");
            }
            return;
        }
        final Throwable e = thrown.get();
        if (e == null)
        {
            return;
        }
        if (e instanceof NullPointerException || e instanceof ArithmeticException || !documented(e))
        {
            final StringBuilder sb = new StringBuilder(name(m) + "(" + what + "): " + e);
            for (final StackTraceElement f : e.getStackTrace())
            {
                sb.append("\n    at ").append(f);
                if (sb.length() > 1200)
                {
                    break;
                }
            }
            violations.add(sb.toString());
            return;
        }
        refusals.merge(e.getClass().getSimpleName(), 1, Integer::sum);
    }

    private static boolean documented(final Throwable t)
    {
        return FuzzVerdict.documented(t) || t instanceof RendezvousException || t instanceof UnsupportedOperationException;
    }

    private static String name(final Method m)
    {
        return m.getDeclaringClass().getSimpleName() + "." + m.getName() + java.util.Arrays.toString(m.getParameterTypes());
    }
}
