# `cmake --install` makes te4j a CMake package for C++/CUDA users:
#   find_package(te4j CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE te4j::te4j)          # libte4j + the public headers
#   target_link_libraries(kernels PRIVATE te4j::device)    # the device headers alone
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_library(te4j_device INTERFACE)
add_library(te4j::device ALIAS te4j_device)
set_target_properties(te4j_device PROPERTIES EXPORT_NAME device)
target_include_directories(te4j_device INTERFACE $<BUILD_INTERFACE:${TE4J_DEVICE_INCLUDE_DIR}>
                                                 $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS te4j te4j_device EXPORT te4jTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${TE4J_CPP_DIR}/include/ ${TE4J_DEVICE_INCLUDE_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT te4jTargets NAMESPACE te4j:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/te4j)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/te4jConfig.cmake
     "include(\"\${CMAKE_CURRENT_LIST_DIR}/te4jTargets.cmake\")\n")
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/te4jConfigVersion.cmake
                                 VERSION 0.1.0 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/te4jConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/te4jConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/te4j)
