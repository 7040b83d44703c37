/**
 * te4j's JDK Flight Recorder events: what a Java operator records ({@code -XX:StartFlightRecording},
 * {@code jcmd <pid> JFR.start}, or {@link jdk.jfr.Recording} in process) to see transfers,
 * notifications and lost peers beside the JVM's own events. Every event is off unless a
 * recording enables it by name (category "te4j"; the JDK's default and profile settings leave
 * them off), and te4j asks {@code isEnabled()} or {@code shouldCommit()} before it allocates or
 * fills one, so an event that is off costs a check the JIT folds away. te4j emits them;
 * applications only read them, by their {@code @Name}.
 */
package io.github.te4j.telemetry;
