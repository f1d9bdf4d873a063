module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x8xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.negate %arg0 : tensor<4x8xf32>
    %1 = stablehlo.multiply %0, %arg0 : tensor<4x8xf32>
    %2 = stablehlo.exponential %1 : tensor<4x8xf32>
    %3 = stablehlo.abs %arg1 : tensor<4x8xf32>
    %4 = stablehlo.log_plus_one %3 : tensor<4x8xf32>
    %5 = stablehlo.add %2, %4 : tensor<4x8xf32>
    %6 = stablehlo.sine %5 : tensor<4x8xf32>
    %7 = stablehlo.cosine %arg0 : tensor<4x8xf32>
    %8 = stablehlo.multiply %6, %7 : tensor<4x8xf32>
    %9 = stablehlo.tanh %arg1 : tensor<4x8xf32>
    %10 = stablehlo.subtract %8, %9 : tensor<4x8xf32>
    %11 = stablehlo.abs %10 : tensor<4x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %13 = stablehlo.add %11, %12 : tensor<4x8xf32>
    %14 = stablehlo.sqrt %13 : tensor<4x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %16 = stablehlo.add %5, %15 : tensor<4x8xf32>
    %17 = stablehlo.rsqrt %16 : tensor<4x8xf32>
    %18 = stablehlo.add %14, %17 : tensor<4x8xf32>
    %19 = stablehlo.maximum %18, %arg0 : tensor<4x8xf32>
    %20 = stablehlo.minimum %10, %arg1 : tensor<4x8xf32>
    %21 = stablehlo.subtract %19, %20 : tensor<4x8xf32>
    %22 = stablehlo.negate %21 : tensor<4x8xf32>
    %23 = stablehlo.exponential %22 : tensor<4x8xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %25 = stablehlo.add %24, %23 : tensor<4x8xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %27 = stablehlo.divide %26, %25 : tensor<4x8xf32>
    %cst_3 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %29 = stablehlo.divide %arg0, %28 : tensor<4x8xf32>
    %30 = stablehlo.exponential_minus_one %29 : tensor<4x8xf32>
    %31 = stablehlo.multiply %27, %30 : tensor<4x8xf32>
    %32 = stablehlo.abs %arg1 : tensor<4x8xf32>
    %cst_4 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %33 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %34 = stablehlo.add %32, %33 : tensor<4x8xf32>
    %cst_5 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %36 = stablehlo.power %34, %35 : tensor<4x8xf32>
    %37 = stablehlo.add %31, %36 : tensor<4x8xf32>
    %38 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
    %39 = stablehlo.negate %37 : tensor<4x8xf32>
    %40 = call @_where(%38, %37, %39) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %cst_6 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %42 = stablehlo.multiply %arg0, %41 : tensor<4x8xf32>
    %43 = stablehlo.floor %42 : tensor<4x8xf32>
    %44 = stablehlo.add %40, %43 : tensor<4x8xf32>
    %cst_7 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %45 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %46 = stablehlo.multiply %arg1, %45 : tensor<4x8xf32>
    %47 = stablehlo.ceil %46 : tensor<4x8xf32>
    %48 = stablehlo.subtract %44, %47 : tensor<4x8xf32>
    %cst_8 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %50 = stablehlo.multiply %arg0, %49 : tensor<4x8xf32>
    %51 = call @round(%50) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %52 = stablehlo.add %48, %51 : tensor<4x8xf32>
    %cst_9 = stablehlo.constant dense<-3.000000e+00> : tensor<f32>
    %cst_10 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %53 = call @clip(%52, %cst_9, %cst_10) : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
    %54 = stablehlo.atan2 %arg0, %arg1 : tensor<4x8xf32>
    %55 = stablehlo.add %53, %54 : tensor<4x8xf32>
    %56 = stablehlo.sign %arg1 : tensor<4x8xf32>
    %cst_11 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %58 = stablehlo.multiply %56, %57 : tensor<4x8xf32>
    %59 = stablehlo.add %55, %58 : tensor<4x8xf32>
    return %59 : tensor<4x8xf32>
  }
  func.func private @_where(%arg0: tensor<4x8xi1>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4x8xi1>, tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  func.func private @round(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  func.func private @clip(%arg0: tensor<4x8xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<4x8xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<4x8xf32>
    %3 = stablehlo.convert %arg2 : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<4x8xf32>
    return %5 : tensor<4x8xf32>
  }
}
