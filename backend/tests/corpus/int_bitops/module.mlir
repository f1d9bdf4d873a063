module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xi32>, %arg1: tensor<12xi32>, %arg2: tensor<12xui8>) -> (tensor<12xi32> {jax.result_info = "result[0]"}, tensor<12xi32> {jax.result_info = "result[1]"}, tensor<12xi32> {jax.result_info = "result[2]"}, tensor<12xi32> {jax.result_info = "result[3]"}, tensor<12xi32> {jax.result_info = "result[4]"}, tensor<12xi32> {jax.result_info = "result[5]"}, tensor<12xi32> {jax.result_info = "result[6]"}, tensor<12xi32> {jax.result_info = "result[7]"}, tensor<12xui8> {jax.result_info = "result[8]"}, tensor<12xui8> {jax.result_info = "result[9]"}) {
    %0 = stablehlo.abs %arg1 : tensor<12xi32>
    %c = stablehlo.constant dense<32> : tensor<i32>
    %1 = call @remainder(%0, %c) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %2 = stablehlo.and %arg0, %arg1 : tensor<12xi32>
    %3 = stablehlo.not %arg1 : tensor<12xi32>
    %4 = stablehlo.xor %arg0, %3 : tensor<12xi32>
    %5 = stablehlo.or %2, %4 : tensor<12xi32>
    %6 = stablehlo.shift_left %arg0, %1 : tensor<12xi32>
    %7 = stablehlo.shift_right_arithmetic %arg0, %1 : tensor<12xi32>
    %8 = stablehlo.shift_right_logical %arg0, %1 : tensor<12xi32>
    %9 = stablehlo.popcnt %arg0 : tensor<12xi32>
    %10 = stablehlo.count_leading_zeros %arg0 : tensor<12xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %11 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %12 = stablehlo.compare EQ, %arg1, %11, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %13 = call @_where_0(%12, %c_1, %arg1) : (tensor<12xi1>, tensor<i32>, tensor<12xi32>) -> tensor<12xi32>
    %14 = stablehlo.divide %arg0, %13 : tensor<12xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %15 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %16 = stablehlo.compare EQ, %arg1, %15, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %17 = call @_where_0(%16, %c_3, %arg1) : (tensor<12xi1>, tensor<i32>, tensor<12xi32>) -> tensor<12xi32>
    %18 = stablehlo.remainder %arg0, %17 : tensor<12xi32>
    %c_4 = stablehlo.constant dense<37> : tensor<ui8>
    %19 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<ui8>) -> tensor<12xui8>
    %20 = stablehlo.multiply %arg2, %19 : tensor<12xui8>
    %c_5 = stablehlo.constant dense<11> : tensor<ui8>
    %21 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<ui8>) -> tensor<12xui8>
    %22 = stablehlo.add %20, %21 : tensor<12xui8>
    %c_6 = stablehlo.constant dense<3> : tensor<ui8>
    %23 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<ui8>) -> tensor<12xui8>
    %24 = stablehlo.shift_right_logical %arg2, %23 : tensor<12xui8>
    %25 = stablehlo.xor %22, %24 : tensor<12xui8>
    %26 = stablehlo.popcnt %arg2 : tensor<12xui8>
    return %5, %6, %7, %8, %9, %10, %14, %18, %25, %26 : tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xui8>, tensor<12xui8>
  }
  func.func private @remainder(%arg0: tensor<12xi32>, %arg1: tensor<i32>) -> tensor<12xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<12xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<12xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<12xi1>, tensor<12xi1>) -> tensor<12xi1>
    %12 = stablehlo.and %11, %6 : tensor<12xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %14 = stablehlo.add %4, %13 : tensor<12xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<12xi1>, tensor<12xi32>
    return %15 : tensor<12xi32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @_where_0(%arg0: tensor<12xi1>, %arg1: tensor<i32>, %arg2: tensor<12xi32>) -> tensor<12xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %2 = stablehlo.select %arg0, %1, %arg2 : tensor<12xi1>, tensor<12xi32>
    return %2 : tensor<12xi32>
  }
}
