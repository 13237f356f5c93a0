
BlogitsJ(*=Lœ¼lw=%-½ö……<ÜT½¬
½H´9¼WÚ=Lv»¼