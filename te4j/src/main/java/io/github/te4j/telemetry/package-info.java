/**
 * te4j's JDK Flight Recorder events: what a Java operator records with {@code jcmd <pid>
 * JFR.start} or {@code -XX:StartFlightRecording} (or in process with {@link jdk.jfr.Recording})
 * to see transfers, notifications and lost peers beside the JVM's own events. Nothing is recorded
 * without a recording: the batch, list and peer-loss events are on in the {@code default} and
 * {@code profile} settings, the notification events only where a recording enables them by name
 * (category "te4j"). te4j builds an event's fields only after {@code shouldCommit()} says it is
 * wanted, so an unrecorded event costs a check the JIT folds away. The events are emitted by
 * te4j; applications only read them.
 */
package io.github.te4j.telemetry;
