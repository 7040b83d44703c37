/** The quick start as a named module: te4j works on the module path as on the class path. */
module com.example.consumer
{
    requires io.github.te4j;
}
