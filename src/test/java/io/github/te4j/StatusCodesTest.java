package io.github.te4j;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.Assert;
import org.testng.annotations.Test;

/**
 * Te4jException.Code mirrors te4j::Status of the shipped api.h by hand: this ties the two, name by
 * name and value by value, so a status added on one side and not the other fails here.
 */
public class StatusCodesTest
{
    private static final Pattern ENUM = Pattern.compile("enum Status\\s*:\\s*int\\s*\\{(.*?)\\};", Pattern.DOTALL);
    private static final Pattern ENTRY = Pattern.compile("\\bk([A-Za-z]+)\\s*=\\s*(-?\\d+)");

    /** kInvalidArgument -> INVALID_ARGUMENT. */
    private static String javaName(final String cppName)
    {
        return cppName.replaceAll("([a-z])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT);
    }

    private static String shippedApiHeader() throws IOException
    {
        // The te4j jar carries its installed headers (include/te4j/*.h) for consumers and NVRTC.
        try (InputStream in = Te4jException.class.getClassLoader().getResourceAsStream("include/te4j/api.h"))
        {
            Assert.assertNotNull(in, "include/te4j/api.h is not on the class path (the te4j jar ships it)");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test(groups = "host")
    public void everyNativeStatusHasTheSameJavaCodeAndBack() throws IOException
    {
        final Matcher body = ENUM.matcher(shippedApiHeader());
        Assert.assertTrue(body.find(), "api.h declares enum Status : int { ... }");
        final Map<String, Integer> fromHeader = new TreeMap<>();
        final Matcher e = ENTRY.matcher(body.group(1).replaceAll("//[^\n]*", ""));
        while (e.find())
        {
            fromHeader.put(javaName(e.group(1)), Integer.parseInt(e.group(2)));
        }
        Assert.assertFalse(fromHeader.isEmpty(), "no kName = value entries found in enum Status");
        final Map<String, Integer> fromJava = new TreeMap<>();
        for (final Te4jException.Code c : Te4jException.Code.values())
        {
            if (c != Te4jException.Code.UNKNOWN)
            {
                fromJava.put(c.name(), c.nativeCode());
            }
        }
        Assert.assertEquals(fromJava, fromHeader, "Te4jException.Code (left) against te4j::Status in api.h (right)");
        for (final Map.Entry<String, Integer> s : fromHeader.entrySet())
        {
            Assert.assertEquals(Te4jException.Code.of(s.getValue()).name(), s.getKey(), "Code.of(" + s.getValue() + ")");
        }
        Assert.assertEquals(Te4jException.Code.of(12345), Te4jException.Code.UNKNOWN, "a value te4j does not know");
    }
}
