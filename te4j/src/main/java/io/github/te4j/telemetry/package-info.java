/**
 * te4j's JFR events: what a Java operator records with Flight Recorder
 * ({@code -XX:StartFlightRecording}, or {@code jcmd <pid> JFR.start}) to see transfers,
 * notifications and peer loss beside the rest of the JVM. Every event is disabled unless a
 * recording enables it (category "te4j"); te4j asks {@code shouldCommit()} before it fills one, so an
 * event that is off costs a check and nothing else. Not exported: recordings name the events by
 * their {@code @Name}.
 */
package io.github.te4j.telemetry;
