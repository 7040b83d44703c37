package io.github.te4j.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader for tests (RFC 8259: one value, nothing after it but white space), so that
 * a test can show that what te4j-bench printed is JSON and nothing else. Objects become maps,
 * arrays lists, numbers doubles.
 */
final class JsonCheck
{
    private final String text;
    private int at;

    private JsonCheck(final String text)
    {
        this.text = text;
    }

    /** The value {@code text} holds; IllegalArgumentException naming the offset where it is not JSON. */
    static Object parse(final String text)
    {
        final JsonCheck p = new JsonCheck(text);
        p.space();
        final Object v = p.value();
        p.space();
        if (p.at != text.length())
        {
            throw p.error("text after the JSON value");
        }
        return v;
    }

    private Object value()
    {
        if (at >= text.length())
        {
            throw error("end of text where a value belongs");
        }
        final char c = text.charAt(at);
        switch (c)
        {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string();
            case 't':
                return word("true", Boolean.TRUE);
            case 'f':
                return word("false", Boolean.FALSE);
            case 'n':
                return word("null", null);
            default:
                return number();
        }
    }

    private Map<String, Object> object()
    {
        final Map<String, Object> m = new LinkedHashMap<>();
        at++;
        space();
        if (peek('}'))
        {
            at++;
            return m;
        }
        while (true)
        {
            space();
            if (!peek('"'))
            {
                throw error("a member name must be a string");
            }
            final String name = string();
            space();
            expect(':');
            space();
            m.put(name, value());
            space();
            if (peek(','))
            {
                at++;
                continue;
            }
            expect('}');
            return m;
        }
    }

    private List<Object> array()
    {
        final List<Object> l = new ArrayList<>();
        at++;
        space();
        if (peek(']'))
        {
            at++;
            return l;
        }
        while (true)
        {
            space();
            l.add(value());
            space();
            if (peek(','))
            {
                at++;
                continue;
            }
            expect(']');
            return l;
        }
    }

    private String string()
    {
        final StringBuilder sb = new StringBuilder();
        at++;
        while (true)
        {
            if (at >= text.length())
            {
                throw error("unterminated string");
            }
            final char c = text.charAt(at++);
            if (c == '"')
            {
                return sb.toString();
            }
            if (c < 0x20)
            {
                throw error("control character in a string");
            }
            if (c != '\\')
            {
                sb.append(c);
                continue;
            }
            if (at >= text.length())
            {
                throw error("unterminated escape");
            }
            final char e = text.charAt(at++);
            switch (e)
            {
                case '"': case '\\': case '/': sb.append(e); break;
                case 'b': sb.append('\b'); break;
                case 'f': sb.append('\f'); break;
                case 'n': sb.append('\n'); break;
                case 'r': sb.append('\r'); break;
                case 't': sb.append('\t'); break;
                case 'u':
                    if (at + 4 > text.length())
                    {
                        throw error("short \\u escape");
                    }
                    try
                    {
                        sb.append((char)Integer.parseInt(text.substring(at, at + 4), 16));
                    }
                    catch (final NumberFormatException ex)
                    {
                        throw error("bad \\u escape");
                    }
                    at += 4;
                    break;
                default:
                    throw error("bad escape \\" + e);
            }
        }
    }

    private Double number()
    {
        final int start = at;
        if (peek('-'))
        {
            at++;
        }
        if (peek('0'))
        {
            at++;
        }
        else if (!digits())
        {
            throw error("not a value");
        }
        if (peek('.'))
        {
            at++;
            if (!digits())
            {
                throw error("digits must follow the decimal point");
            }
        }
        if (peek('e') || peek('E'))
        {
            at++;
            if (peek('+') || peek('-'))
            {
                at++;
            }
            if (!digits())
            {
                throw error("digits must follow the exponent");
            }
        }
        return Double.parseDouble(text.substring(start, at));
    }

    private boolean digits()
    {
        final int start = at;
        while (at < text.length() && Character.isDigit(text.charAt(at)))
        {
            at++;
        }
        return at > start;
    }

    private Object word(final String w, final Object v)
    {
        if (!text.startsWith(w, at))
        {
            throw error("not a value");
        }
        at += w.length();
        return v;
    }

    private void space()
    {
        while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0)
        {
            at++;
        }
    }

    private boolean peek(final char c)
    {
        return at < text.length() && text.charAt(at) == c;
    }

    private void expect(final char c)
    {
        if (!peek(c))
        {
            throw error("expected '" + c + "'");
        }
        at++;
    }

    private IllegalArgumentException error(final String what)
    {
        final int from = Math.max(0, at - 30);
        final int to = Math.min(text.length(), at + 30);
        return new IllegalArgumentException("not JSON at offset " + at + ": " + what + " near '"
            + text.substring(from, to) + "'");
    }
}
