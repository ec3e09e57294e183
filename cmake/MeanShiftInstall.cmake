# Installable, relocatable CMake package:
#   find_package(MeanShift) + target_link_libraries(app PRIVATE meanshift::meanshift)
# Layout under the prefix: include/meanshift/*.hpp (public API + generated config.hpp, version.hpp),
# lib/libmeanshift.so*, lib/cmake/MeanShift/{MeanShiftConfig,MeanShiftConfigVersion,MeanShiftTargets}.cmake,
# bin/meanshift (the command-line tool, when apps are built), lib/libmeanshift_mpi.so* (target
# meanshift::mpi, when the MPI layer is built). All paths are relative to the prefix,
# so an installed tree can be moved or copied elsewhere.
include(CMakePackageConfigHelpers)

set(MEANSHIFT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/MeanShift
    CACHE STRING "Where MeanShiftConfig.cmake is installed, relative to the prefix")

set_target_properties(meanshift PROPERTIES EXPORT_NAME meanshift)
install(TARGETS meanshift EXPORT MeanShiftTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The MPI layer (docs/mpi.md), when built: meanshift::mpi, linking MPI::MPI_CXX publicly.
if(TARGET meanshift_mpi)
  set_target_properties(meanshift_mpi PROPERTIES EXPORT_NAME mpi)
  install(TARGETS meanshift_mpi EXPORT MeanShiftTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
# GDAL rasters (docs/raster.md), when built: meanshift::raster. GDAL is linked privately, which a
# shared library hides; a static one would need GDAL at the consumer's link step: not installed then.
if(TARGET meanshift_raster AND BUILD_SHARED_LIBS)
  set_target_properties(meanshift_raster PROPERTIES EXPORT_NAME raster)
  install(TARGETS meanshift_raster EXPORT MeanShiftTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/skeleton/include/meanshift
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES ${CMAKE_BINARY_DIR}/generated/meanshift/config.hpp
              ${CMAKE_BINARY_DIR}/generated/meanshift/version.hpp
              ${CMAKE_BINARY_DIR}/generated/meanshift/export.hpp
              ${CMAKE_BINARY_DIR}/generated/meanshift/profile_list.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/meanshift)
install(EXPORT MeanShiftTargets NAMESPACE meanshift:: DESTINATION ${MEANSHIFT_INSTALL_CMAKEDIR})

# Backends link OpenMP / OpenCL / CUDA privately. A shared libmeanshift hides them completely; a
# static one needs them at the consumer's link step, so the config then finds them too.
get_target_property(_ms_type meanshift TYPE)
if(_ms_type STREQUAL "STATIC_LIBRARY")
  set(MEANSHIFT_STATIC_DEPS 1)
else()
  set(MEANSHIFT_STATIC_DEPS 0)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/MeanShiftConfig.cmake.in
  ${CMAKE_BINARY_DIR}/MeanShiftConfig.cmake
  INSTALL_DESTINATION ${MEANSHIFT_INSTALL_CMAKEDIR})
# 0.x releases may change the API between minor versions, so only the same minor version matches.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/MeanShiftConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/MeanShiftConfig.cmake ${CMAKE_BINARY_DIR}/MeanShiftConfigVersion.cmake
        DESTINATION ${MEANSHIFT_INSTALL_CMAKEDIR})
